"""Scans and screenshots for the OCR tests, made at test time: text rendered with real fonts
(DejaVu, WenQuanYi: `make test` installs both), then "scanned" as benchmarks/ocr_set.py does
(skew, blur, grey paper lit unevenly, noise, dust, JPEG artefacts)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from benchmarks.ocr_set import FONTS, font_path, render, scan
from PIL import Image, ImageDraw, ImageFont

PAGE_DPI = 150  # what the test scans are made at (the loader renders them again at ocr_dpi)


def scanned_page(text: str, lang: str, seed: int = 0, size_pt: int = 12) -> Image.Image:
    """An A4 page of ``text`` (paragraphs apart by a blank line), scanned."""
    clean = render(text, lang, size_pt, PAGE_DPI, font_path(lang, 0))
    return Image.fromarray(scan(clean, np.random.default_rng(seed)))


def image_pdf(pages: Sequence[Image.Image]) -> bytes:
    """A PDF of page images only: no text layer, as a scanner writes it."""
    buffer = io.BytesIO()
    first, *rest = pages
    first.save(buffer, "PDF", save_all=True, append_images=rest, resolution=PAGE_DPI)
    return buffer.getvalue()


def text_and_scan_pdf(text: str, page: Image.Image) -> bytes:
    """Page 1 typed text (a text layer), page 2 a scanned image filling the page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 10, text)
    pdf.add_page()
    png = io.BytesIO()
    page.save(png, "PNG")
    pdf.image(png, x=0, y=0, w=210, h=297)
    return bytes(pdf.output())


def table_png(rows: Sequence[Sequence[str]], px: int = 16, transparent: bool = True) -> bytes:
    """A screenshot of a table with cell borders: dark text on a transparent background (as
    many tools copy one), or on white."""
    face = ImageFont.truetype(FONTS["sans"], px)
    widths = [max(face.getlength(row[i]) for row in rows) + 2 * px for i in range(len(rows[0]))]
    height = 2 * px
    size = (round(sum(widths)) + 20, height * len(rows) + 20)
    image = Image.new("RGBA", size, (255, 255, 255, 0 if transparent else 255))
    draw = ImageDraw.Draw(image)
    y = 10
    for row in rows:
        x = 10.0
        for cell, width in zip(row, widths, strict=True):
            draw.rectangle((x, y, x + width, y + height), outline=(170, 170, 170, 255))
            draw.text((x + px, y + px // 3), cell, font=face, fill=(20, 20, 20, 255))
            x += width
        y += height
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def blank_png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (width, height), 255).save(buffer, "PNG")
    return buffer.getvalue()
