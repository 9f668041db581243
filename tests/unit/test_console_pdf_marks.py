"""Where a cited chunk's lines are on its PDF page (real PDFs written by fpdf2, searched by
PDFium): the boxes are where the text was printed, in percent of the page."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from knowhub.interfaces.http.console.pdf_marks import Box, cited_boxes

A4_MM = (210.0, 297.0)


def _pdf(lines: list[tuple[float, float, str]], pages: int = 1) -> bytes:
    """One A4 page per ``pages``; each (x mm, y mm, text) printed on the last one."""
    from fpdf import FPDF

    pdf = FPDF(unit="mm", format="A4")
    pdf.set_font("helvetica", size=12)
    for _ in range(pages):
        pdf.add_page()
    for x, y, text in lines:
        pdf.set_xy(x, y)
        pdf.cell(text=text)
    return bytes(pdf.output())


def _near(box: Box, x_mm: float, y_mm: float) -> bool:
    left = box.left * A4_MM[0] / 100
    top = box.top * A4_MM[1] / 100
    return abs(left - x_mm) < 4 and abs(top - y_mm) < 8


def test_each_cited_line_is_boxed_where_it_was_printed() -> None:
    data = _pdf(
        [
            (20, 40, "An unrelated heading"),
            (20, 150, "The satellite uplink is tested"),
            (30, 160, "every second Thursday."),
        ]
    )
    boxes = cited_boxes(data, 1, "The satellite uplink is tested\nevery second  Thursday.")
    assert len(boxes) == 2, boxes
    assert _near(boxes[0], 20, 150) and _near(boxes[1], 30, 160), boxes
    assert all(0 < b.width < 100 and 0 < b.height < 10 for b in boxes)


def test_a_repeated_line_is_boxed_at_its_place_in_the_chunk() -> None:
    data = _pdf([(20, 50, "Checked twice"), (20, 100, "Step two"), (20, 200, "Checked twice")])
    first, second = cited_boxes(data, 1, "Step two\nChecked twice")
    assert _near(first, 20, 100) and _near(second, 20, 200), (first, second)


def test_lines_not_on_the_page_are_not_boxed() -> None:
    data = _pdf([(20, 60, "Only on the second page")], pages=2)
    assert cited_boxes(data, 1, "Only on the second page") == []
    assert len(cited_boxes(data, 2, "Only on the second page\nnot printed anywhere")) == 1
    assert cited_boxes(data, 3, "Only on the second page") == []  # no such page
    assert cited_boxes(data, 2, "1\n–\n") == []  # too short to place


@pytest.mark.parametrize("data", [b"not a PDF", b"%PDF-1.4\n%broken"])
def test_an_unreadable_pdf_has_no_boxes(data: bytes) -> None:
    assert cited_boxes(data, 1, "anything at all") == []


def _changed(data: bytes, change: Callable[[Any], None]) -> bytes:
    """``data`` with ``change(page)`` applied to its first page, saved again by PDFium."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    change(pdf[0])
    out = io.BytesIO()
    pdf.save(out)
    pdf.close()
    return out.getvalue()


def test_a_rotated_page_has_no_boxes() -> None:
    turned = _changed(_pdf([(20, 60, "Printed on a turned page")]), lambda p: p.set_rotation(90))
    assert cited_boxes(turned, 1, "Printed on a turned page") == []


def test_boxes_are_placed_on_the_cropped_page_that_is_shown() -> None:
    # Text at x = 60 mm (170.1 pt), its top near y = 150 mm from the top (842 - 425 pt); the
    # page shown is the crop box [100, 100, 500, 742] pt, not the A4 media box.
    printed = _pdf([(60, 150, "Inside the cropped area"), (5, 5, "Cut off by the crop")])
    cropped = _changed(printed, lambda p: p.set_cropbox(100, 100, 500, 742))
    (box,) = cited_boxes(cropped, 1, "Inside the cropped area")
    assert abs(box.left - 100 * (170.1 - 100) / 400) < 2, box
    assert abs(box.top - 100 * (742 - 417) / 642) < 3, box
    assert cited_boxes(cropped, 1, "Cut off by the crop") == []  # searched, found, not shown
