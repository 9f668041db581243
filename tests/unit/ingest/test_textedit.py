"""Edits on a loaded document's text keep its pages, headings and body start on their content."""

from __future__ import annotations

import random

import pytest

from knowhub.ingest.textedit import Edit, apply_edits
from knowhub.models import Heading, LoadedDocument

_ALPHABET = "ab \n-"


def _doc(text: str, marks: list[int]) -> LoadedDocument:
    """A document with a page start and a heading at each of ``marks``."""
    return LoadedDocument(
        text=text,
        title="t",
        format="pdf",
        page_starts=tuple(marks),
        headings=tuple(Heading(1, f"h{at}", at) for at in marks),
        body_start=marks[0],
        line_map=None,
    )


def _random_edits(rng: random.Random, text: str, protected: set[int]) -> list[Edit]:
    """Disjoint edits that never touch a protected offset's character."""
    edits: list[Edit] = []
    at = 0
    while at < len(text):
        start = at + rng.randrange(0, 4)
        end = min(len(text), start + rng.randrange(0, 4))
        if start > len(text) or any(start <= p < end for p in protected):
            at = start + 1
            continue
        edits.append(Edit(start, end, "".join(rng.choices(_ALPHABET, k=rng.randrange(0, 3)))))
        at = max(end, start + 1)
    return edits


def test_every_offset_still_points_at_the_same_content_after_random_edits() -> None:
    rng = random.Random(20)
    for _ in range(300):
        text = "".join(rng.choices(_ALPHABET, k=rng.randrange(5, 60)))
        marks = sorted(rng.sample(range(len(text)), rng.randrange(1, 4)))
        # Each mark is a distinct character that no edit touches: after the edits the
        # offsets must land on exactly those characters.
        text = "".join(chr(0x41 + marks.index(i)) if i in marks else c for i, c in enumerate(text))
        doc = _doc(text, marks)
        edits = _random_edits(rng, text, set(marks))
        rng.shuffle(edits)
        edited = apply_edits(doc, edits)
        assert len(edited.headings) == len(marks)  # no heading's line was touched
        pairs = zip(edited.page_starts, edited.headings, strict=True)
        for number, (page, heading) in enumerate(pairs):
            assert edited.text[page] == chr(0x41 + number)
            assert edited.text[heading.char_start] == chr(0x41 + number)
        assert edited.text[edited.body_start] == "A"


def test_edited_text_is_the_replacements_spliced_in() -> None:
    doc = _doc("Header 1\nbody of infor-\nmation\n\n\n\nend", [0])
    edited = apply_edits(doc, [Edit(22, 24), Edit(0, 9), Edit(30, 34, "\n")])
    assert edited.text == "body of information\nend"


def test_offset_inside_a_replaced_run_moves_past_its_replacement() -> None:
    text = "one\n\n\n\n\ntwo"
    doc = _doc(text, [0, 6])  # page 2 starts inside the blank run
    edited = apply_edits(doc, [Edit(3, 8, "\n\n")])
    assert edited.text == "one\n\ntwo"
    assert edited.page_starts == (0, 5)


def test_heading_whose_line_was_removed_is_dropped() -> None:
    doc = _doc("Running head\nTitle\nbody", [0])
    doc = LoadedDocument(
        **{**doc.__dict__, "headings": (Heading(1, "Running head", 0), Heading(1, "Title", 13))}
    )
    edited = apply_edits(doc, [Edit(0, 13)])
    assert [(h.title, h.char_start) for h in edited.headings] == [("Title", 0)]


def test_no_change_returns_the_document_itself() -> None:
    doc = _doc("same text", [0])
    assert apply_edits(doc, []) is doc
    assert apply_edits(doc, [Edit(0, 4, "same")]) is doc


def test_a_document_cited_by_file_lines_is_never_edited() -> None:
    doc = LoadedDocument(text="a  b", title="t", format="markdown")
    with pytest.raises(ValueError, match="file lines"):
        apply_edits(doc, [Edit(1, 3, " ")])


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError, match="overlaps"):
        apply_edits(_doc("abcdef", [0]), [Edit(1, 4), Edit(3, 5)])


def test_a_pictures_block_moves_with_its_text_or_loses_its_place() -> None:
    from dataclasses import replace

    from knowhub.models import DocumentImage

    text = "ACME header\n\nBody  text.\n\n[Image: a chart]\n\n[Image: a logo]"
    chart, logo = text.index("[Image: a chart]"), text.index("[Image: a logo]")
    images = (
        DocumentImage("a" * 64, "image/png", 80, 80, 1, "a chart", "ocr", chart, chart + 16),
        DocumentImage("b" * 64, "image/png", 80, 80, 1, "a logo", "alt", logo, logo + 15),
    )
    doc = replace(_doc(text, [0]), images=images)
    edited = apply_edits(doc, [Edit(0, 13), Edit(17, 19, " "), Edit(logo, logo + 15)])
    moved, dropped = edited.images
    assert moved.start is not None and moved.end is not None
    assert edited.text[moved.start : moved.end] == "[Image: a chart]"
    assert (dropped.start, dropped.end, dropped.described_by) == (None, None, "")
