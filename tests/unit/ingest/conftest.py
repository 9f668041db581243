"""Builders for the loader tests: real documents written at test time, no binaries committed."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

Writer = Callable[[str, bytes], Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """Write bytes to ``tmp_path / name`` and return the path."""

    def _write(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return _write


PdfMaker = Callable[..., Path]


@pytest.fixture
def make_pdf(write: Writer) -> PdfMaker:
    """Write a PDF built by :func:`_pdf_bytes` as ``name`` and return its path."""

    def _make(name: str, pages: Sequence[str], **options: object) -> Path:
        return write(name, _pdf_bytes(pages, **options))  # type: ignore[arg-type]

    return _make


@pytest.fixture
def docx_path(write: Writer) -> Path:
    """See :func:`_docx_bytes`."""
    return write("guide.docx", _docx_bytes())


@pytest.fixture
def pptx_path(write: Writer) -> Path:
    """See :func:`_pptx_bytes`."""
    return write("review.pptx", _pptx_bytes())


@pytest.fixture
def xlsx_path(write: Writer) -> Path:
    """See :func:`_xlsx_bytes`."""
    return write("people.xlsx", _xlsx_bytes())


def _pdf_bytes(
    pages: Sequence[str],
    *,
    title: str | None = None,
    password: str | None = None,
    font: Path | None = None,
) -> bytes:
    """A PDF with one page per string (fpdf2); an empty string gives a page of ink with no text
    layer and no image (a drawing: nothing for OCR; tests/scans.py makes scans)."""
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    if font is not None:
        pdf.add_font("body", fname=str(font))
        pdf.set_font("body", size=12)
    else:
        pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 10, text)
        else:
            pdf.rect(20, 20, 80, 80, style="F")  # ink, but no text layer
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    return bytes(pdf.output())


def _docx_bytes() -> bytes:
    """A Word document with headings, a list, a table between paragraphs, and an odd line."""
    from docx import Document

    document = Document()
    document.add_heading("Backup Guide", level=0)
    document.add_paragraph("Backups run nightly at 02:00.")
    document.add_heading("Restoring", level=1)
    document.add_paragraph("Stop the service first.", style="List Bullet")
    document.add_paragraph("Copy the snapshot back.", style="List Bullet")
    table = document.add_table(rows=3, cols=2)
    rows = [("Tier", "Retention"), ("gold", "90 days"), ("a|b", "7")]
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_heading("Details", level=2)
    document.add_paragraph("# not a heading, just a hash")
    return _save(document)


def _pptx_bytes() -> bytes:
    """Three slides: titled with body and notes, titled with a table, untitled."""
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Quarterly Review"
    first.placeholders[1].text_frame.text = "Revenue grew 12 percent"
    first.notes_slide.notes_text_frame.text = "Mention the new region."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Numbers"
    shape = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1))
    for index, value in enumerate(["Region", "Sales", "EU", "42"]):
        shape.table.cell(index // 2, index % 2).text = value
    third = presentation.slides.add_slide(presentation.slide_layouts[6])
    box = third.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    box.text_frame.text = "Closing remarks about churn"
    return _save(presentation)


def _xlsx_bytes() -> bytes:
    """A workbook with two data sheets and an empty one."""
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Staff"
    sheet.append(["Name", "Age", "Team"])
    sheet.append(["Ada", 36, "Core"])
    sheet.append(["Lin", 41.0, None])
    other = workbook.create_sheet("Budget")
    other.append(["Item", "Cost"])
    other.append(["Servers", 1200.5])
    workbook.create_sheet("Empty")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _save(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()
