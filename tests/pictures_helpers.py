"""Documents with pictures inside, generated: a Word file, a slide deck and a PDF."""

from __future__ import annotations

import io
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont


def shapes_png(seed: int, size: tuple[int, int] = (320, 200)) -> bytes:
    """A PNG of coloured bars and circles, no text (so OCR reads nothing in it): ``seed``
    makes each picture different."""
    rng = random.Random(seed)
    picture = Image.new("RGB", size, (250, 250, 245))
    draw = ImageDraw.Draw(picture)
    for _ in range(6):
        x, y = rng.randrange(size[0] - 60), rng.randrange(size[1] - 60)
        colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        if rng.random() < 0.5:
            draw.rectangle((x, y, x + rng.randrange(20, 60), y + rng.randrange(20, 60)), colour)
        else:
            draw.ellipse((x, y, x + 50, y + 50), colour)
    return png(picture)


def text_png(text: str, size: tuple[int, int] = (900, 160)) -> bytes:
    """A PNG screenshot of one line of black text on white."""
    picture = Image.new("RGB", size, "white")
    ImageDraw.Draw(picture).text((30, 50), text, fill="black", font=ImageFont.load_default(36))
    return png(picture)


def png(picture: Image.Image) -> bytes:
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def word_with_figure(path: Path, figure: bytes, *, icon: bool = True, alt: str = "") -> None:
    """A .docx: a heading, a paragraph, the figure (and a 16-px icon), a closing paragraph."""
    from docx import Document
    from docx.shared import Inches

    document = Document()
    document.add_heading("Plant report", 1)
    document.add_paragraph("The plant ran three shifts this quarter without incident.")
    document.add_picture(io.BytesIO(figure), width=Inches(3))
    if alt:
        document.inline_shapes[-1]._inline.docPr.set("descr", alt)
    if icon:
        icon_png = png(Image.new("RGB", (16, 16), (200, 30, 30)))
        document.add_picture(io.BytesIO(icon_png), width=Inches(0.2))
    document.add_paragraph("Questions go to the plant manager.")
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def deck_with_picture(path: Path, picture: bytes) -> None:
    """A .pptx of two slides, the picture on the second."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[5])
    first.shapes.title.text = "Quarterly review"
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Output"
    second.shapes.add_picture(io.BytesIO(picture), Inches(1), Inches(2), width=Inches(4))
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))


def pdf_with_picture(path: Path, picture: bytes) -> None:
    """A two-page PDF with text on both pages, the picture on page 2."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in (1, 2):
        pdf.add_page()
        pdf.multi_cell(0, 8, f"Page {number} of the maintenance log: routine checks were done.")
        if number == 2:
            pdf.image(io.BytesIO(picture), x=20, y=60, w=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
