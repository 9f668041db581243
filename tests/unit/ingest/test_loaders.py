"""Behaviour of the document loaders, on files built at test time."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import knowhub.ingest.loaders as loaders
from knowhub.errors import LoaderError
from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.loaders import SUPPORTED_EXTENSIONS, load, markdown_headings
from knowhub.ingest.loaders.markdown import TABLE_BLOCK_CHARS, markdown_table
from knowhub.models import Heading, LoadedDocument

# Fixture types (the builders live in conftest.py).
Writer = Callable[[str, bytes], Path]
PdfMaker = Callable[..., Path]

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
RUSSIAN = (
    "Резервные копии создаются каждую ночь. Если сервер упал, остановите службу, "
    "скопируйте последний снимок обратно и запустите её снова. Проверьте журнал."
)
CHINESE = (
    "备份每天夜里自动运行。如果服务器出现故障，请先停止服务，然后把最近的快照复制回来，"
    "再重新启动。最后检查日志，确认没有错误。"
)


SMALL = ChunkingOptions(size=60, overlap=0)


def _page_of(document: LoadedDocument, phrase: str) -> int:
    """1-based page holding ``phrase``, the way citations compute it."""
    offset = document.text.index(phrase)
    return sum(1 for start in document.page_starts if start <= offset)


def _load_error(path: Path, data: bytes | None = None) -> LoaderError:
    with pytest.raises(LoaderError) as info:
        load(path, data)
    assert str(info.value).startswith(str(path))
    return info.value


# --- public API -------------------------------------------------------------------------


def test_public_api_is_exactly_load_headings_extensions_and_options() -> None:
    assert sorted(loaders.__all__) == [
        "ARCHIVE_EXTENSIONS",
        "ArchiveLimits",
        "COMPRESSED_EXTENSIONS",
        "Entry",
        "IMAGE_EXTENSIONS",
        "Limits",
        "MAIL_EXTENSIONS",
        "OcrOptions",
        "PageProgress",
        "READ_FORMATS",
        "SUPPORTED_EXTENSIONS",
        "container_entries",
        "is_container",
        "load",
        "markdown_headings",
        "unsupported_reason",
    ]
    assert set(loaders.IMAGE_EXTENSIONS) <= SUPPORTED_EXTENSIONS
    assert {".md", ".mdx", ".markdown", ".txt", ".rst", ".pdf", ".docx", ".pptx"} <= (
        SUPPORTED_EXTENSIONS
    )
    assert {".html", ".htm", ".xhtml", ".csv", ".xlsx", ".json"} <= SUPPORTED_EXTENSIONS
    assert all(ext == ext.lower() and ext.startswith(".") for ext in SUPPORTED_EXTENSIONS)


def test_extension_is_matched_case_insensitively(write: Writer) -> None:
    assert load(write("NOTES.TXT", b"hello")).text == "hello"


def test_given_bytes_are_used_instead_of_reading_the_file(tmp_path: Path) -> None:
    document = load(tmp_path / "never-written.md", b"# From memory\n")
    assert document.title == "From memory"


# --- errors common to every format -------------------------------------------------------


def test_unsupported_extension_lists_the_supported_ones(write: Writer) -> None:
    error = _load_error(write("drawing.dwg", b"AC1032"))
    assert "unsupported file type '.dwg'" in str(error)
    assert ".pdf" in str(error) and ".md" in str(error)


def test_an_archive_is_not_a_document_its_members_are(write: Writer) -> None:
    assert "its members are read" in str(_load_error(write("bundle.zip", b"PK")))


@pytest.mark.parametrize("name", ["empty.md", "empty.pdf", "empty.docx", "blank.txt"])
def test_empty_file_is_rejected(write: Writer, name: str) -> None:
    data = b"  \n\t\n" if name == "blank.txt" else b""
    assert "is empty" in str(_load_error(write(name, data)))


def test_document_with_only_empty_paragraphs_is_empty(write: Writer) -> None:
    assert "is empty" in str(_load_error(write("page.html", b"<html><p> </p></html>")))


def test_unreadable_file_says_so_and_chains_the_os_error(tmp_path: Path) -> None:
    error = _load_error(tmp_path / "missing.md")
    assert "cannot be read" in str(error)
    assert isinstance(error.__cause__, OSError)


def test_binary_file_named_txt_is_rejected(write: Writer) -> None:
    error = _load_error(write("photo.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20))
    assert "looks like a binary file, not text" in str(error)


# --- text decoding ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "text"),
    [
        ("utf-8", "Grüße, 你好, Привет"),
        ("utf-8-sig", "Grüße, 你好, Привет"),
        ("utf-16", "Grüße, 你好, Привет"),  # with BOM, native order
        ("utf-16-le-bom", "Grüße, 你好, Привет"),
        ("utf-16-be-bom", "Grüße, 你好, Привет"),
        ("utf-32", "Grüße, 你好, Привет"),
        ("gbk", CHINESE),
        ("gb18030", CHINESE + "𠀀㐀"),  # characters outside GBK
        ("cp1251", RUSSIAN),
    ],
)
def test_text_decodes_to_the_exact_original(write: Writer, encoding: str, text: str) -> None:
    if encoding.endswith("-bom"):
        codec = encoding.removesuffix("-bom")
        data = "\ufeff".encode(codec) + text.encode(codec)
    else:
        data = text.encode(encoding)
    assert load(write("note.txt", data)).text == text


def test_russian_cp1251_that_is_also_valid_gb18030_is_read_as_russian(write: Writer) -> None:
    # Every word has an even number of letters, so the bytes pair up as GB18030 too.
    text = "Мы идём туда, куда наши люди. Он тоже идёт туда. Ждём всех дома."
    data = text.encode("cp1251")
    assert data.decode("gb18030")  # the trap is real
    assert load(write("note.txt", data)).text == text


def test_chinese_gbk_that_is_also_valid_cp1251_is_read_as_chinese(write: Writer) -> None:
    data = CHINESE.encode("gbk")
    assert data.decode("cp1251")  # the trap is real
    assert load(write("note.md", data)).text == CHINESE


def test_newlines_are_normalized_to_line_feeds(write: Writer) -> None:
    assert load(write("note.txt", b"one\r\ntwo\rthree\n")).text == "one\ntwo\nthree\n"


# --- Markdown, MDX, reStructuredText, plain text -------------------------------------------


def test_markdown_headings_finds_atx_and_setext_with_offsets() -> None:
    text = "# Top #\n\nintro\n\nSub One\n-------\n\nPart\ntwo\n=====\n\n### Deep\n"
    assert markdown_headings(text) == (
        Heading(1, "Top", 0),
        Heading(2, "Sub One", text.index("Sub One")),
        Heading(1, "Part two", text.index("Part")),
        Heading(3, "Deep", text.index("### Deep")),
    )


def test_markdown_headings_skip_code_fences_breaks_and_lists() -> None:
    text = (
        "```python\n# a comment\n```\n\n~~~~\n## inside\n~~~\nstill code\n~~~~\n\n"
        "---\n\n- item\n---\n\n    # indented code\n\n#hashtag\n\n## Real\n"
    )
    assert markdown_headings(text) == (Heading(2, "Real", text.index("## Real")),)


def test_markdown_front_matter_goes_to_metadata_and_text_stays_whole(write: Writer) -> None:
    source = "---\ntitle: Ops Handbook\ntags: [ops, backup]\ndate: 2024-05-01\n---\n# Intro\n"
    document = load(write("handbook.md", source.encode()))
    assert document.text == source
    assert document.metadata == {
        "title": "Ops Handbook",
        "tags": ["ops", "backup"],
        "date": "2024-05-01",
    }
    assert document.title == "Ops Handbook"
    assert document.headings == (Heading(1, "Intro", source.index("# Intro")),)
    assert document.format == "markdown"


def test_markdown_title_is_first_level_one_heading_else_first_heading_else_stem(
    write: Writer,
) -> None:
    assert load(write("a.md", b"## Minor\n\n# Major\n")).title == "Major"
    assert load(write("b.md", b"## Minor\n\ntext\n")).title == "Minor"
    assert load(write("release-notes.md", b"no headings here\n")).title == "release-notes"


def test_mdx_keeps_jsx_and_imports_as_text(write: Writer) -> None:
    source = 'import Chart from "./chart"\n\n# Metrics\n\n<Chart data={rows} />\n'
    document = load(write("metrics.mdx", source.encode()))
    assert document.text == source
    assert document.format == "mdx"
    assert [heading.title for heading in document.headings] == ["Metrics"]


def test_rst_heading_levels_follow_first_appearance_of_each_style(write: Writer) -> None:
    source = (
        "=========\n Manual\n=========\n\nIntro text.\n\n"
        "Install\n~~~~~~~\n\nSteps.\n\nLinux\n*****\n\nApt.\n\nUsage\n~~~~~\n"
    )
    document = load(write("manual.rst", source.encode()))
    assert document.headings == (
        Heading(1, "Manual", 0),
        Heading(2, "Install", source.index("Install")),
        Heading(3, "Linux", source.index("Linux")),
        Heading(2, "Usage", source.index("Usage")),
    )
    assert document.title == "Manual"
    assert document.text == source


def test_plain_text_has_no_headings_and_is_titled_by_stem(write: Writer) -> None:
    document = load(write("todo.txt", b"# not markdown\nbuy milk\n"))
    assert document.headings == ()
    assert document.title == "todo"
    assert document.format == "text"


# --- PDF -------------------------------------------------------------------------------------


def test_pdf_pages_map_phrases_to_their_page(make_pdf: PdfMaker) -> None:
    pages = ["Alpha opening remarks.", "Bravo middle section.", "Charlie closing words."]
    document = load(make_pdf("report.pdf", pages, title="Annual Report"))
    assert len(document.page_starts) == 3
    assert document.page_starts[0] == 0
    assert _page_of(document, "Alpha") == 1
    assert _page_of(document, "Bravo middle") == 2
    assert _page_of(document, "Charlie") == 3
    assert document.title == "Annual Report"
    assert document.metadata["pages"] == 3
    assert document.format == "pdf"


@pytest.mark.skipif(not DEJAVU.exists(), reason="needs the DejaVu font for Cyrillic")
def test_pdf_cyrillic_text_is_extracted(make_pdf: PdfMaker) -> None:
    document = load(make_pdf("ru.pdf", ["Введение", RUSSIAN], font=DEJAVU))
    assert "Резервные копии" in document.text
    assert _page_of(document, "Резервные") == 2
    assert document.title == "Введение"  # no Title property: its first line, a title


def test_pdf_with_a_blank_page_keeps_page_numbers(make_pdf: PdfMaker) -> None:
    document = load(make_pdf("gap.pdf", ["First page.", "", "Third page."]))
    assert _page_of(document, "Third") == 3


def test_password_protected_pdf_is_rejected(make_pdf: PdfMaker) -> None:
    error = _load_error(make_pdf("secret.pdf", ["Top secret."], password="pw"))
    assert "is password-protected: decrypt it first" in str(error)
    assert error.__cause__ is not None


def test_truncated_pdf_is_not_readable(make_pdf: PdfMaker, write: Writer) -> None:
    data = make_pdf("whole.pdf", ["Some text."]).read_bytes()
    error = _load_error(write("broken.pdf", data[: len(data) // 3]))
    assert "is not a readable PDF" in str(error)


def test_pdf_of_drawings_without_text_or_images_asks_for_ocr_software(make_pdf: PdfMaker) -> None:
    # Ink but neither a text layer nor an image: nothing for OCR to read (tests/unit/ingest/
    # test_ocr.py reads scans).
    error = _load_error(make_pdf("drawn.pdf", ["", ""]))
    assert "has no extractable text, and no page is a scanned image" in str(error)
    assert "ocrmypdf --force-ocr" in str(error)


# --- Office ----------------------------------------------------------------------------------


def test_docx_renders_headings_lists_and_tables_in_body_order(docx_path: Path) -> None:
    document = load(docx_path)
    assert document.text == (
        "# Backup Guide\n\nBackups run nightly at 02:00.\n\n# Restoring\n\n"
        "- Stop the service first.\n- Copy the snapshot back.\n\n"
        "| Tier | Retention |\n| --- | --- |\n| gold | 90 days |\n| a\\|b | 7 |\n\n"
        "## Details\n\n\\# not a heading, just a hash"
    )
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "Backup Guide"),
        (1, "Restoring"),
        (2, "Details"),
    ]
    assert document.title == "Backup Guide"
    assert document.format == "docx"


def test_pptx_slides_are_pages_with_titles_tables_and_notes(pptx_path: Path) -> None:
    document = load(pptx_path)
    slides = [
        document.text[start:end].strip()
        for start, end in zip(
            document.page_starts, [*document.page_starts[1:], len(document.text)], strict=True
        )
    ]
    assert slides == [
        "# Quarterly Review\n\nRevenue grew 12 percent\n\nNotes:\nMention the new region.",
        "# Numbers\n\n| Region | Sales |\n| --- | --- |\n| EU | 42 |",
        "# Slide 3\n\nClosing remarks about churn",
    ]
    assert _page_of(document, "churn") == 3
    assert document.metadata["slides"] == 3
    assert document.title == "Quarterly Review"
    assert [h.title for h in document.headings] == ["Quarterly Review", "Numbers", "Slide 3"]


def test_xlsx_sheets_become_headed_markdown_tables(xlsx_path: Path) -> None:
    document = load(xlsx_path)
    assert document.text == (
        "# Staff\n\n| Name | Age | Team |\n| --- | --- | --- |\n| Ada | 36 | Core |\n"
        "| Lin | 41 |  |\n\n# Budget\n\n| Item | Cost |\n| --- | --- |\n| Servers | 1200.5 |"
    )
    assert document.metadata == {"sheets": ["Staff", "Budget", "Empty"], "rows": 3}
    assert [h.title for h in document.headings] == ["Staff", "Budget"]
    assert document.title == "people"


@pytest.mark.parametrize("name", ["locked.docx", "locked.pptx", "locked.xlsx"])
def test_encrypted_office_file_is_rejected(write: Writer, name: str) -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504
    assert "is encrypted/password-protected" in str(_load_error(write(name, ole)))


@pytest.mark.parametrize("name", ["broken.docx", "broken.pptx", "broken.xlsx"])
def test_corrupt_office_file_is_rejected(write: Writer, name: str) -> None:
    error = _load_error(write(name, b"this is not a zip archive at all"))
    assert f"is not a valid {Path(name).suffix} (corrupt or not an Office file)" in str(error)


def test_zip_without_word_parts_is_not_a_valid_docx(docx_path: Path, write: Writer) -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "not a document")
    error = _load_error(write("fake.docx", buffer.getvalue()))
    assert "is not a valid .docx" in str(error)
    assert error.__cause__ is not None


# --- HTML --------------------------------------------------------------------------------


def test_html_keeps_content_and_drops_page_furniture(write: Writer) -> None:
    page = """<!DOCTYPE html><html><head><title>Backup FAQ</title>
    <style>p { color: red }</style><script>var tracking = 1;</script></head>
    <body><nav><a href="/">Home</a></nav>
    <h1>Backups</h1><p>They run <b>nightly</b>.<br>Always.</p><!-- hidden -->
    <h2>Steps</h2><ul><li>Stop it<ul><li>gracefully</li></ul></li><li>Restore</li></ul>
    <table><tr><th>Tier</th><th>Days</th></tr><tr><td>gold</td><td>90</td></tr></table>
    <pre>
# shell comment
restore --all</pre>
    <div>Loose text</div><footer>© Example</footer></body></html>"""
    document = load(write("faq.html", page.encode()))
    assert document.text == (
        "# Backups\n\nThey run nightly. Always.\n\n## Steps\n\n"
        "- Stop it\n  - gracefully\n- Restore\n\n"
        "| Tier | Days |\n| --- | --- |\n| gold | 90 |\n\n"
        "```\n# shell comment\nrestore --all\n```\n\nLoose text"
    )
    assert document.title == "Backup FAQ"
    assert [(h.level, h.title) for h in document.headings] == [(1, "Backups"), (2, "Steps")]


def test_html_meta_charset_is_honoured(write: Writer) -> None:
    page = f'<html><head><meta charset="gb2312"></head><body><h1>{CHINESE}</h1></body></html>'
    document = load(write("zh.htm", page.encode("gbk")))
    assert document.title == CHINESE


# --- CSV --------------------------------------------------------------------------------


def test_csv_sniffs_the_delimiter_and_escapes_pipes(write: Writer) -> None:
    document = load(write("prices.csv", b"item;price\nwidget;3|4\n\n"))
    assert document.text == "# prices\n\n| item | price |\n| --- | --- |\n| widget | 3\\|4 |"
    assert document.metadata == {"sheets": ["prices"], "rows": 1}


def test_long_csv_is_split_into_tables_that_repeat_the_header(write: Writer) -> None:
    rows = [f"{n},value {n}" for n in range(200)]
    document = load(write("big.csv", ("id,label\n" + "\n".join(rows) + "\n").encode()))
    blocks = document.text.split("\n\n")[1:]
    assert len(blocks) > 3
    assert all(block.startswith("| id | label |\n| --- | --- |\n") for block in blocks)
    assert all(len(block) <= TABLE_BLOCK_CHARS for block in blocks)
    body = [line for block in blocks for line in block.split("\n")[2:]]
    assert body == [f"| {n} | value {n} |" for n in range(200)]  # each row once, in order
    assert document.metadata["rows"] == 200


def test_a_table_block_takes_a_row_even_when_the_row_alone_is_over_the_budget() -> None:
    wide = "x" * TABLE_BLOCK_CHARS
    assert markdown_table([["h"], [wide], ["y"]]) == (
        f"| h |\n| --- |\n| {wide} |\n\n| h |\n| --- |\n| y |"
    )
    assert markdown_table([["only", "a header"]]) == "| only | a header |\n| --- | --- |"
    assert markdown_table([]) == ""


def test_csv_in_cp1251_is_decoded(write: Writer) -> None:
    document = load(write("люди.csv", "имя,город\nАнна,Москва\n".encode("cp1251")))
    assert "| Анна | Москва |" in document.text


# --- JSON --------------------------------------------------------------------------------


def test_json_renders_dotted_paths_under_top_level_headings(write: Writer) -> None:
    value = {
        "title": "Service config",
        "server": {"host": "db.local", "ports": [5432, 5433], "tls": None},
        "users": [{"name": "ada", "admin": True}],
    }
    document = load(write("config.json", json.dumps(value).encode()))
    assert document.text == (
        "title: Service config\n\n"
        "# server\n\nserver.host: db.local\nserver.ports[0]: 5432\n"
        "server.ports[1]: 5433\nserver.tls: null\n\n"
        "# users\n\nusers[0].name: ada\nusers[0].admin: true"
    )
    assert [h.title for h in document.headings] == ["server", "users"]
    assert document.title == "Service config"


def test_flat_json_has_no_headings(write: Writer) -> None:
    document = load(write("flat.json", b'{"a": 1, "b": "two\\nlines"}'))
    assert document.text == 'a: 1\nb: "two\\nlines"'
    assert document.headings == ()


def test_invalid_json_names_line_and_column(write: Writer) -> None:
    error = _load_error(write("bad.json", b'{\n  "a": 1,\n  "b": }\n'))
    assert "is not valid JSON" in str(error)
    assert "line 3, column 8" in str(error)
    assert isinstance(error.__cause__, json.JSONDecodeError)


# --- titles from an obvious first line ----------------------------------------------------


@pytest.mark.parametrize("title", [None, "untitled", "Microsoft Word - policy.docx"])
def test_pdf_without_a_real_title_property_is_titled_by_its_first_line(
    make_pdf: PdfMaker, title: str | None
) -> None:
    pages = ["Account Policy\nPasswords have at least twelve characters, and change yearly."]
    assert load(make_pdf("scan_0012.pdf", pages, title=title)).title == "Account Policy"


@pytest.mark.parametrize(
    "first",
    [
        "Passwords have at least twelve characters.",  # a sentence
        "Dear team,",  # a letter
        "A very long first line that runs on and on well past what anyone would call a "
        "title, the way body text does",
    ],
)
def test_a_first_line_that_is_no_title_leaves_the_file_stem(make_pdf: PdfMaker, first: str) -> None:
    pages = [f"{first}\nThe rest of the page is body text, longer than any title would be."]
    assert load(make_pdf("policy.pdf", pages)).title == "policy"


def test_plain_text_is_titled_by_a_first_line_set_off_as_a_title(write: Writer) -> None:
    text = b"Release Notes 2.4\n\nThe scheduler now retries failed jobs.\n"
    assert load(write("rn.txt", text)).title == "Release Notes 2.4"
    assert load(write("todo.txt", b"milk\neggs\nbread\n")).title == "todo"  # a list


# --- lines of the file, and noise that never becomes text ---------------------------------

# As `makeinfo --html` (texinfo 7) writes a node, with the texinfo 6 footer bar too.
TEXINFO_NODE = """<!DOCTYPE html>
<html>
<!-- Created by GNU Texinfo 7.1, https://www.gnu.org/software/texinfo/ -->
<head>
<title>Backups (Ops Manual)</title>
<link href="Restoring.html" rel="next" title="Restoring">
</head>
<body lang="en">
<div class="chapter-level-extent" id="Backups">
<div class="nav-panel">
<p>
Next: <a href="Restoring.html" accesskey="n" rel="next">Restoring</a>, Previous: <a
href="Overview.html" accesskey="p" rel="prev">Overview</a>, Up: <a href="index.html"
accesskey="u" rel="up">Ops Manual</a> &nbsp; [<a href="index.html#SEC_Contents"
title="Table of contents" rel="contents">Contents</a>][<a href="Index.html">Index</a>]</p>
</div>
<hr>
<h2 class="chapter" id="Backups-1"><span>2 Backups</span></h2>

<p>Snapshots of every volume are taken at
02:00 each night and kept for
thirty days.
</p>
<ul>
<li>Check the log first.</li>
<li>Then restore.</li>
</ul>
<pre class="example">
restore --all
restore --verify
</pre>
<hr>
<div class="header">
<p>
Next: <a href="Restoring.html" accesskey="n" rel="next">Restoring</a>, Up: <a
href="index.html" accesskey="u" rel="up">Ops Manual</a> &nbsp;</p>
</div>
</div>
</body>
</html>
"""


def _file_line(source: str, phrase: str) -> int:
    return source.count("\n", 0, source.index(phrase)) + 1


def test_texinfo_navigation_bars_are_not_text(write: Writer) -> None:
    document = load(write("Backups.html", TEXINFO_NODE.encode()))
    assert document.text == (
        "## 2 Backups\n\nSnapshots of every volume are taken at 02:00 each night and kept "
        "for thirty days.\n\n- Check the log first.\n- Then restore.\n\n"
        "```\nrestore --all\nrestore --verify\n```"
    )
    assert document.title == "Backups (Ops Manual)"


def test_a_paragraph_that_starts_with_next_is_still_text(write: Writer) -> None:
    page = '<p>Next: stop the <a href="svc.html">service</a> and restore the snapshot.</p>'
    assert load(write("steps.html", page.encode())).text == (
        "Next: stop the service and restore the snapshot."
    )


def test_html_chunks_cite_the_lines_of_the_file(write: Writer) -> None:
    source = TEXINFO_NODE.replace("<body", "<!--\n" + "padding\n" * 40 + "-->\n<body")
    chunks = chunk_document(load(write("Backups.html", source.encode())), "0" * 64, SMALL)
    cited = {piece.text.split()[0]: (piece.line_start, piece.line_end) for piece in chunks}
    assert cited["##"][0] == _file_line(source, "<h2")
    assert cited["each"][1] == _file_line(source, "thirty days")  # the paragraph's end
    assert cited["-"] == (_file_line(source, "Check the log"), _file_line(source, "Then"))
    assert cited["```"] == (_file_line(source, "<pre"), _file_line(source, "</pre>"))


def test_html_table_blocks_cite_the_lines_of_their_rows(write: Writer) -> None:
    rows = "\n".join(
        f"<tr><td>item {n}</td><td>a long description of item {n}</td></tr>" for n in range(40)
    )
    source = (
        f"<h1>Items</h1>\n<table>\n<tr><th>name</th><th>description</th></tr>\n{rows}\n</table>\n"
    )
    document = load(write("items.html", source.encode()))
    chunks = chunk_document(document, "0" * 64, ChunkingOptions())
    assert len(chunks) > 3
    for piece in chunks:
        names = [line.split(" | ")[0][2:] for line in piece.text.split("\n") if "| item" in line]
        assert piece.line_end == _file_line(source, f"<td>{names[-1]}</td>")
        if piece.index:  # the first block opens at the heading
            assert piece.line_start == _file_line(source, f"<td>{names[0]}</td>")


def test_markdown_and_text_chunks_cite_the_lines_of_the_file(write: Writer) -> None:
    source = "---\ntitle: Ops\n---\n\n# Backups\n\nThey run nightly.\n"
    for name in ("ops.md", "ops.txt"):
        chunks = chunk_document(load(write(name, source.encode())), "0" * 64, SMALL)
        last = chunks[-1]
        assert last.text.endswith("They run nightly.")
        assert last.line_end == _file_line(source, "They run")


def test_formats_without_lines_are_cited_without_them(make_pdf: PdfMaker, docx_path: Path) -> None:
    for path in (make_pdf("report.pdf", ["Alpha.", "Bravo."]), docx_path):
        chunks = chunk_document(load(path), "0" * 64, SMALL)
        assert chunks and all((c.line_start, c.line_end) == (0, 0) for c in chunks)


# --- bytes that are not text ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["notes.txt", "notes.md", "notes.html"])
def test_utf8_with_a_few_bad_bytes_is_indexed_with_a_warning_giving_their_offsets(
    write: Writer, name: str
) -> None:
    good = ("Привет, мир. " * 20).encode()
    data = good[:100] + b"\xff" + good[100:200] + b"\xc3\x28" + good[200:]
    document = load(write(name, data))
    assert "Привет, мир." in document.text and document.text.count("\ufffd") == 2
    [warning] = document.warnings
    assert warning.startswith(str(write(name, data)))
    assert "byte offsets 100, 201" in warning and "UTF-8" in warning


def test_bad_bytes_after_a_byte_order_mark_are_replaced_with_a_warning(write: Writer) -> None:
    data = "\ufeffGrüße".encode() + b"\xff tail"
    document = load(write("bom.txt", data))
    assert document.text == "Grüße\ufffd tail"
    assert "byte offset 10" in document.warnings[0]


def test_clean_text_has_no_warnings(write: Writer) -> None:
    assert load(write("ok.txt", "Grüße".encode())).warnings == ()


def test_text_mostly_of_bad_bytes_is_still_rejected(write: Writer) -> None:
    noise = bytes(range(0x80, 0x100)) * 8  # no encoding reads this as prose
    with pytest.raises(LoaderError, match="has an unknown text encoding"):
        load(write("noise.txt", ("Привет " * 10).encode() + noise))
