"""Rule-based cleanup: page furniture, line-break hyphens and runs of whitespace go; nothing
else changes."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from knowhub.ingest.cleanup import clean_document
from knowhub.ingest.loaders import load
from knowhub.models import LoadedDocument
from tests.helpers import ROOT


def _pdf_text(pages: list[str]) -> LoadedDocument:
    """A PDF's document as its loader makes it: pages joined by a blank line."""
    starts, at = [], 0
    for page in pages:
        starts.append(at)
        at += len(page) + 2
    return LoadedDocument("\n\n".join(pages), "t", "pdf", page_starts=tuple(starts), line_map=None)


def _page(number: int, body: str) -> str:
    return f"ACME Confidential — Page {number}\n{body}\nPrinted 2024-0{number}-01 · {number}/5"


def test_header_and_footer_on_most_pages_are_removed_pages_kept() -> None:
    bodies = ["Cover page", "Intro text here.", "Rules apply.", "More rules.", "The end."]
    pages = [bodies[0], *(_page(n, b) for n, b in enumerate(bodies[1:], start=2))]
    cleaned = clean_document(_pdf_text(pages))
    assert "ACME" not in cleaned.text and "Printed" not in cleaned.text
    for start, body in zip(cleaned.page_starts, bodies, strict=True):
        assert cleaned.text[start:].startswith(body)


def test_a_title_taken_from_the_running_head_is_picked_again() -> None:
    pages = [_page(1, "Travel Policy\n\nBooking rules follow.")]
    pages += [_page(n, f"Body of page {n} goes on for a while.") for n in (2, 3)]
    doc = LoadedDocument(**{**_pdf_text(pages).__dict__, "title": "ACME Confidential — Page 1"})
    assert clean_document(doc).title == "Travel Policy"


def test_a_line_on_fewer_than_three_pages_or_under_60_percent_stays() -> None:
    two = _pdf_text([_page(1, "one"), _page(2, "two")])
    assert clean_document(two) is two
    # 3 of 6 pages (50 %): a coincidence as likely as a running head.
    six = _pdf_text([_page(n, "x") if n < 4 else "plain" for n in range(1, 7)])
    assert clean_document(six) is six


def test_a_repeated_line_in_the_middle_of_pages_stays() -> None:
    pages = [f"Top {n}\nalpha\nbeta\ngamma\nNote: keep this\ndelta\neps\nzeta" for n in range(4)]
    cleaned = clean_document(_pdf_text(pages))
    assert cleaned.text.count("Note: keep this") == 4 and "Top" not in cleaned.text


def test_slides_keep_a_line_repeated_on_each() -> None:
    slides = _pdf_text([f"Slide {n}\nNotes: do not share" for n in range(4)])
    slides = LoadedDocument(**{**slides.__dict__, "format": "pptx"})
    assert clean_document(slides) is slides


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the infor-\nmation desk", "the information desk"),
        ("при-\nмер текста", "пример текста"),
        ("a soft\u00adhy\u00ad \n  phen", "a soft\u00adhyphen"),
        ("self-employed staff; self-\nemployed staff", "self-employed staff; self-employed staff"),
        ("see Section-\nB now", "see Section-\nB now"),  # uppercase: a name, not a split word
        ("version 2-\n3 rows", "version 2-\n3 rows"),  # digits: a range
        ("ends with a dash -\nnext", "ends with a dash -\nnext"),
        ("infor\x02mation and Section\x02B", "information and Section-B"),  # PDFium's
    ],
)
def test_words_hyphenated_across_lines_are_joined(text: str, expected: str) -> None:
    assert clean_document(_pdf_text([text])).text == expected


def test_runs_of_spaces_and_blank_lines_collapse_but_tables_and_indents_stay() -> None:
    text = "a  lot   of    space  \n    indented  line\n| a  | b |\n\n\n\n\nnext"
    expected = "a lot of space\n    indented line\n| a  | b |\n\nnext"
    assert clean_document(_pdf_text([text])).text == expected


def test_a_document_cited_by_lines_is_never_cleaned() -> None:
    doc = LoadedDocument("infor-\nmation  here\n\n\n\n", "t", "markdown")
    assert clean_document(doc) is doc


def test_example_documents_come_out_unchanged_but_the_pdfs_running_footer() -> None:
    changed = {}
    for path in sorted((ROOT / "examples/docs").rglob("*.*")):
        doc = load(path)
        cleaned = clean_document(doc)
        if cleaned is not doc:
            lines = difflib.ndiff(doc.text.splitlines(), cleaned.text.splitlines())
            changed[path.name] = [line for line in lines if line[:1] in "+-"]
    assert changed == {
        "onboarding.pdf": [f"- Northwind Robotics onboarding - page {n} of 3" for n in (1, 2, 3)]
    }


def test_cleaned_pages_still_start_with_their_own_text(tmp_path: Path) -> None:
    doc = load(ROOT / "examples/docs/en/onboarding.pdf")
    cleaned = clean_document(doc)
    assert len(cleaned.page_starts) == len(doc.page_starts)
    for old, new in zip(doc.page_starts, cleaned.page_starts, strict=True):
        assert cleaned.text[new : new + 40] == doc.text[old : old + 40]


def test_pages_of_one_or_two_lines_keep_their_text() -> None:
    pages = [
        f"Item {2 * n - 1} was checked by the night shift.\n"
        f"Item {2 * n} was checked by the night shift."
        for n in range(1, 6)
    ]
    doc = _pdf_text(pages)
    assert clean_document(doc) is doc  # before: every line was taken for furniture


def test_a_running_head_ocr_read_a_little_otherwise_on_each_page_is_removed() -> None:
    heads = ["ACME Operations Handbook", "ACME Dperations Handbook", "ACME Operations Handb00k"]
    feet = [
        "Page 1 of 6",
        "Page2ocf 6",
        "Раде 3 of 6",
        ": Page 4 of 6 :",
        "page5of6",
        "Page 6 of 6",
    ]
    pages = [
        f"{heads[n % 3]}\nSection {n} covers the {word} procedure.\nIt has two steps.\n{foot}"
        for n, (word, foot) in enumerate(
            zip(
                ["intake", "loading", "sorting", "packing", "shipping", "returns"],
                feet,
                strict=True,
            )
        )
    ]
    cleaned = clean_document(_pdf_text(pages)).text
    assert "Handb" not in cleaned and "of 6" not in cleaned and "Раде" not in cleaned
    assert cleaned.count("It has two steps.") == 6 and "returns procedure" in cleaned


def test_picture_blocks_ending_pages_are_never_taken_for_footers() -> None:
    from dataclasses import replace

    from knowhub.models import DocumentImage

    pages, images, at = [], [], 0
    for n, place in enumerate(["Harbor", "Quarry", "Mill", "Dock", "Ridge"], start=1):
        block = f"[Image: {place} pump station Flow rate chart Pressure readings]"
        page = f"Report for {place}, page {n}.\nThe {place.lower()} readings were normal.\n{block}"
        start = at + page.index(block)
        images.append(
            DocumentImage(f"{n}" * 64, "image/png", 80, 80, n, "", "ocr", start, start + len(block))
        )
        pages.append(page)
        at += len(page) + 2
    doc = replace(_pdf_text(pages), images=tuple(images))
    cleaned = clean_document(doc)
    for image in cleaned.images:
        assert image.start is not None and image.end is not None
        assert cleaned.text[image.start : image.end].endswith("Pressure readings]")
