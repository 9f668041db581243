import hashlib
import itertools
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from knowhub.ingest.chunk import ChunkingOptions, chunk_document, make_chunk_id
from knowhub.ingest.loaders import load
from knowhub.lang import count_tokens
from knowhub.models import Chunk, Heading, LineSpan, LoadedDocument

# Fixture types (the builders live in conftest.py).
Writer = Callable[[str, bytes], Path]
PdfMaker = Callable[..., Path]

DOC_HASH = hashlib.sha256(b"a document").hexdigest()

EN = [
    "Backups are taken every night at two o'clock.",
    "The restore procedure is described below; read it before an incident!",
    "Is the replica lagging behind the primary?",
    "Version 3.5 of the agent ships with a new scheduler.",
    "Operators should rotate credentials every ninety days.",
]
ZH = [
    "备份每天晚上两点进行。",
    "恢复流程如下所述，请在事故发生前阅读！",
    "副本是否落后于主库？",
    "新版本的代理程序带有新的调度器；",
    "运维人员应每九十天轮换一次凭据……",
]
RU = [
    "Резервные копии создаются каждую ночь в два часа.",
    "Процедура восстановления описана ниже; прочитайте её заранее!",
    "Отстаёт ли реплика от основного сервера?",
    "Операторы должны менять пароли каждые девяносто дней.",
]


def markdown(text: str, page_starts: tuple[int, ...] = ()) -> LoadedDocument:
    """A document whose headings are its ``#`` lines, as a Markdown loader finds them."""
    headings = tuple(
        Heading(len(match.group(1)), match.group(2), match.start())
        for match in re.finditer(r"^(#+) (.*)$", text, re.MULTILINE)
    )
    return LoadedDocument(text, "doc", "markdown", headings, page_starts)


def chunk(doc: LoadedDocument, size: int = 800, overlap: int = 150, **kwargs: str) -> list[Chunk]:
    return chunk_document(doc, DOC_HASH, ChunkingOptions(size, overlap, **kwargs))  # type: ignore[arg-type]


def mixed_text(rng: random.Random, paragraphs: int) -> str:
    """Markdown in English, Chinese and Russian with headings and odd whitespace."""
    parts = []
    for number in range(paragraphs):
        if rng.random() < 0.15:
            parts.append(f"{'#' * rng.randint(1, 4)} Section {number}")
        sentences = rng.choice([EN, ZH, RU])
        joiner = "" if sentences is ZH else rng.choice([" ", "  ", "\n"])
        parts.append(joiner.join(rng.choice(sentences) for _ in range(rng.randint(1, 40))))
        if rng.random() < 0.05:
            parts.append("x" * rng.randint(100, 2000))  # a "word" with no break at all
    separators = ["\n\n", "\n \n", "\n\n\n", "\r\n\r\n", "\n\t\n  "]
    return "".join(part + rng.choice(separators) for part in parts)


def assert_spans_exact(doc: LoadedDocument, chunks: list[Chunk]) -> None:
    for index, piece in enumerate(chunks):
        assert piece.index == index
        assert piece.text == doc.text[piece.char_start : piece.char_end]
        assert piece.text.strip() == piece.text != ""
        assert piece.line_start == doc.text.count("\n", 0, piece.char_start) + 1
        assert piece.line_end == doc.text.count("\n", 0, piece.char_end - 1) + 1
    starts = [piece.char_start for piece in chunks]
    assert starts == sorted(set(starts))


def section_ends(chunks: list[Chunk]) -> list[bool]:
    """Whether each chunk is the last of its section run."""
    paths = [piece.section_path for piece in chunks]
    return [i + 1 == len(paths) or paths[i + 1] != paths[i] for i in range(len(paths))]


def test_section_paths_follow_nested_headings() -> None:
    doc = markdown(
        "Preamble.\n\n# Guide\n\nIntro.\n\n## Install\n\nRun pip.\n\n"
        "### Linux\n\nUse apt.\n\n## Backups\n\nNightly.\n\n# FAQ\n\nAsk.\n\n"
        "### Deep\n\nSkipped a level.\n\n## Top\n\nBack up.\n"
    )
    assert [piece.section_path for piece in chunk(doc)] == [
        "",
        "Guide",
        "Guide > Install",
        "Guide > Install > Linux",
        "Guide > Backups",
        "FAQ",
        "FAQ > Deep",
        "FAQ > Top",
    ]


def test_no_chunk_crosses_a_heading() -> None:
    text = "".join(
        f"# Part {part}\n\n" + " ".join(EN * 6) + "\n\n" + "".join(ZH * 6) + "\n\n"
        for part in range(5)
    )
    doc = markdown(text)
    chunks = chunk(doc, size=300, overlap=60)
    heading_starts = [heading.char_start for heading in doc.headings]
    for piece in chunks:
        assert not [h for h in heading_starts if piece.char_start < h < piece.char_end]
        enclosing = [h for h in doc.headings if h.char_start <= piece.char_start][-1]
        assert piece.section_path == enclosing.title


def test_a_heading_line_opens_the_chunk_of_its_body() -> None:
    body = " ".join(EN[:3])  # fits in a chunk, but not together with its heading
    doc = markdown("# Backups\n\n" + body)
    first = chunk(doc, size=len(body) + 5, overlap=0)[0]
    assert first.text == "# Backups\n\n" + " ".join(EN[:2])


def test_a_heading_without_body_opens_its_first_subsection() -> None:
    doc = markdown("# Guide\n\n## Install\n\nRun pip.\n\n## Upgrade\n\nRun pip again.\n")
    chunks = chunk(doc)
    assert [piece.text for piece in chunks] == [
        "# Guide\n\n## Install\n\nRun pip.",
        "## Upgrade\n\nRun pip again.",
    ]
    assert [piece.section_path for piece in chunks] == ["Guide > Install", "Guide > Upgrade"]


def test_chunks_stay_within_the_size_bound() -> None:
    rng = random.Random(7)
    for size in (40, 120, 400, 800):
        chunks = chunk(markdown(mixed_text(rng, 60)), size=size, overlap=size // 5)
        for piece, is_last in zip(chunks, section_ends(chunks), strict=True):
            # Only a section's last chunk may have absorbed a tiny tail.
            assert len(piece.text) <= (size * 1.1 if is_last else size)


def test_spans_are_exact_over_long_mixed_language_text() -> None:
    rng = random.Random(42)
    options = [(800, 150, "chars"), (200, 0, "chars"), (64, 63, "chars"), (120, 30, "tokens")]
    for _ in range(4):
        doc = markdown(mixed_text(rng, 80))
        for size, overlap, unit in options:
            assert_spans_exact(doc, chunk(doc, size, overlap, unit=unit))


def test_long_chinese_paragraph_splits_at_full_stops() -> None:
    sentence = "系统每天晚上自动备份数据库并把备份文件上传到对象存储。"  # 27 characters
    text = sentence * (3000 // len(sentence))
    chunks = chunk(markdown(text), size=800, overlap=100)
    assert len(chunks) >= 4
    assert all(len(piece.text) <= 800 for piece in chunks)
    assert all(piece.text.endswith("。") for piece in chunks)
    assert all(piece.text.startswith("系统") for piece in chunks)
    assert {piece.language for piece in chunks} == {"zh"}


def test_russian_text_is_split_at_sentences_and_detected() -> None:
    text = " ".join(RU * 20)
    chunks = chunk(markdown(text), size=500, overlap=80)
    assert len(chunks) > 3
    assert all(piece.text[-1] in ".!?;" for piece in chunks)
    assert {piece.language for piece in chunks} == {"ru"}
    assert_spans_exact(markdown(text), chunks)


def test_consecutive_chunks_overlap_by_at_most_the_overlap() -> None:
    text = " ".join(EN * 30)
    chunks = chunk(markdown(text), size=400, overlap=100)
    for previous, following in itertools.pairwise(chunks):
        shared = previous.char_end - following.char_start
        assert 0 < shared <= 100
        assert text[following.char_start - 1] == " "  # starts at a word


def test_zero_overlap_gives_disjoint_chunks() -> None:
    chunks = chunk(markdown(" ".join(EN * 30)), size=400, overlap=0)
    for previous, following in itertools.pairwise(chunks):
        assert following.char_start > previous.char_end


def test_overlap_does_not_reach_into_the_previous_section() -> None:
    doc = markdown("# One\n\n" + " ".join(EN * 10) + "\n\n# Two\n\n" + " ".join(EN * 10))
    chunks = chunk(doc, size=300, overlap=100)
    second_heading = doc.headings[1].char_start
    first_of_two = next(piece for piece in chunks if piece.section_path == "Two")
    assert first_of_two.char_start == second_heading


def test_tiny_tail_merges_into_the_previous_chunk() -> None:
    body = "word " * 79 + "end."  # 399 characters
    chunks = chunk(markdown(body + "\n\n" + body + "\n\nTail."), size=800, overlap=0)
    assert len(chunks) == 1
    assert chunks[0].text.endswith("Tail.")


def test_text_without_any_break_is_split_hard() -> None:
    text = "x" * 2500
    chunks = chunk(markdown(text), size=800, overlap=100)
    assert all(len(piece.text) <= 800 for piece in chunks)
    assert chunks[0].char_start == 0
    assert chunks[-1].char_end == 2500


def test_token_unit_bounds_chunks_by_token_count() -> None:
    text = " ".join(EN * 10) + "\n\n" + "".join(ZH * 10)
    chunks = chunk(markdown(text), size=50, overlap=10, unit="tokens")
    assert len(chunks) > 5
    assert all(count_tokens(piece.text) <= 55 for piece in chunks)
    assert_spans_exact(markdown(text), chunks)


def test_pages_come_from_page_starts() -> None:
    pages = ["First page text. " * 20, "Second page text. " * 20, "Third page. " * 20]
    text = "\n\n".join(pages)
    starts = (0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4)
    chunks = chunk(LoadedDocument(text, "doc", "pdf", page_starts=starts), size=200, overlap=0)
    for piece in chunks:
        expected = sum(1 for start in starts if start <= piece.char_start)
        assert piece.page == expected
    assert {piece.page for piece in chunks} == {1, 2, 3}
    assert chunk(markdown(text))[0].page is None


def test_line_numbers_are_one_based_and_inclusive() -> None:
    text = "\n\nfirst line\nsecond line\n\n\nthird para\nends here\n"
    chunks = chunk(markdown(text), size=25, overlap=0)
    assert [(piece.text, piece.line_start, piece.line_end) for piece in chunks] == [
        ("first line\nsecond line", 3, 4),
        ("third para\nends here", 7, 8),
    ]


def test_chunk_ids_are_stable_and_follow_the_design_format() -> None:
    doc = markdown(mixed_text(random.Random(3), 30))
    first, second = chunk(doc, size=300, overlap=50), chunk(doc, size=300, overlap=50)
    assert first == second
    for piece in first:
        assert re.fullmatch(r"[0-9a-f]{16}_\d{4}_[0-9a-f]{8}", piece.chunk_id)
        assert piece.chunk_id == make_chunk_id(DOC_HASH, piece.index, piece.text)
    digest = hashlib.sha256(b"hello").hexdigest()[:8]
    assert make_chunk_id(DOC_HASH, 12, "hello") == f"{DOC_HASH[:16]}_0012_{digest}"


def test_metadata_is_copied_into_each_chunk() -> None:
    metadata = {"tags": "ops"}
    doc = markdown(" ".join(EN * 30))
    chunks = chunk_document(doc, DOC_HASH, ChunkingOptions(size=300), metadata)
    assert len(chunks) > 1
    assert all(piece.metadata == {"tags": "ops"} for piece in chunks)
    chunks[0].metadata["tags"] = "changed"
    assert chunks[1].metadata == metadata == {"tags": "ops"}


def test_language_is_detected_per_chunk() -> None:
    doc = markdown(
        "# En\n\n" + " ".join(EN) + "\n\n# Zh\n\n" + "".join(ZH) + "\n\n# Ru\n\n" + " ".join(RU)
    )
    assert [piece.language for piece in chunk(doc)] == ["en", "zh", "ru"]


def test_blank_document_has_no_chunks() -> None:
    assert chunk(markdown("")) == []
    assert chunk(markdown("  \n\n\t \r\n  ")) == []


@pytest.mark.parametrize(("size", "overlap"), [(100, 100), (100, 150), (100, -1), (0, 0)])
def test_invalid_size_or_overlap_is_rejected(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="chunk"):
        ChunkingOptions(size=size, overlap=overlap)


# --- pages and file lines ------------------------------------------------------------------

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
# A 3-page Russian policy (~650 characters, less than one chunk): the lockout rule is on
# page 2, so a chunk spanning all three pages would cite it "p. 1".
POLICY_PAGES = [
    "Политика учётных записей\n"
    "Этот документ описывает правила входа в корпоративные системы для всех сотрудников "
    "компании. Пароль должен содержать не менее двенадцати символов.",
    "Блокировка учётной записи\n"
    "После пяти неудачных попыток входа учётная запись блокируется на тридцать минут. "
    "Чтобы снять блокировку раньше, позвоните в службу поддержки по номеру 1234.",
    "Смена пароля\n"
    "Пароль меняют каждые девяносто дней. Новый пароль не может совпадать ни с одним из "
    "трёх предыдущих. Временный пароль действует одни сутки.",
]


def test_no_chunk_crosses_a_page_start() -> None:
    pages = [" ".join(EN[:3]), " ".join(EN[3:]), "Short last page."]
    text = "\n\n".join(pages)
    starts = (0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4)
    chunks = chunk(markdown(text, starts), size=800)  # all of it would fit in one chunk
    assert [(piece.page, piece.text) for piece in chunks] == list(
        zip([1, 2, 3], pages, strict=True)
    )


@pytest.mark.skipif(not DEJAVU.exists(), reason="needs the DejaVu font for Cyrillic")
def test_russian_pdf_answer_on_page_two_is_cited_on_page_two(make_pdf: PdfMaker) -> None:
    doc = load(make_pdf("policy.pdf", POLICY_PAGES, font=DEJAVU))
    assert 500 < len(doc.text) < 800  # one chunk's worth, if pages did not split it
    chunks = chunk(doc)
    [lockout] = [piece for piece in chunks if "блокируется" in piece.text]
    assert lockout.page == 2
    assert "двенадцати" not in lockout.text and "девяносто" not in lockout.text
    assert doc.title == "Политика учётных записей"  # its first line, not "untitled"
    assert (lockout.line_start, lockout.line_end) == (0, 0)  # a PDF has pages, not lines


def test_reflowed_pieces_map_to_file_lines_in_proportion() -> None:
    # As the HTML loader writes them: a heading from line 10, a paragraph joined from
    # file lines 12-15, a code block whose 3 lines are file lines 20-22.
    paragraph = " ".join(EN)
    text = f"# Intro\n\n{paragraph}\n\n```\none\ntwo\nthree\n```"
    code = text.index("one")
    spans = (
        LineSpan(0, 10, 10),
        LineSpan(9, 12, 15),
        LineSpan(code - 4, 19, 19),
        LineSpan(code, 20, 22),
        LineSpan(text.index("\n```", code) + 1, 23, 23),
    )
    doc = LoadedDocument(text, "doc", "html", line_map=spans)
    whole = chunk(doc, size=2000, overlap=0)
    assert [(piece.line_start, piece.line_end) for piece in whole] == [(10, 23)]
    pieces = chunk(doc, size=130, overlap=0)
    # Sentences 1-2, 3-4 and 5 of the paragraph: 0-40 %, 40-80 % and 80-100 % of it.
    assert [(piece.line_start, piece.line_end) for piece in pieces] == [
        (10, 13),
        (13, 14),
        (14, 23),
    ]
    two = [p for p in chunk(doc, size=4, overlap=0) if p.text == "two" and p.char_start > code]
    assert [(piece.line_start, piece.line_end) for piece in two] == [(21, 21)]


def test_markdown_front_matter_is_never_a_chunk(write: Writer) -> None:
    source = "---\ntitle: Ops\ntags: [ops]\n---\n\nBackups run nightly.\n"
    chunks = chunk(load(write("ops.md", source.encode())))
    assert [(piece.text, piece.line_start) for piece in chunks] == [("Backups run nightly.", 6)]
