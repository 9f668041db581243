"""The corpus of benchmarks/ingest_scans.py, generated from a seed: scanned PDFs (en, zh, ru),
the same pages as text PDFs, a scanned PNG per language, and a Word file and a PDF with
pictures (charts and screenshots with text in them, photos without).

Scanned and text pages carry a running header and a page footer, as printed manuals do, so
that cleanup has furniture to remove; a page's truth is its body only.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from benchmarks.ocr_set import (
    A4_INCHES,
    FONTS,
    LANGS,
    SENTENCES,
    font_path,
    one_page,
    render,
    scan,
)
from PIL import Image, ImageDraw, ImageFont

SEED = 20
SCAN_DPI = 200  # knowhub's ingest.ocr_dpi: the page is read at the pixels it was scanned at
SIZE_PT = 11
HEADER = "ACME Operations Handbook"
PICTURES = 10  # per picture document: half with text in them, half photos


@dataclass
class Corpus:
    """The files written, by kind, and what each says: a page's body text (scans, text
    PDFs, PNGs), or the words drawn in a document's pictures."""

    kinds: dict[str, list[Path]] = field(default_factory=dict)
    truth: dict[str, list[str]] = field(default_factory=dict)  # file name → page bodies
    picture_words: dict[str, list[str]] = field(default_factory=dict)  # file name → words
    pages: dict[str, int] = field(default_factory=dict)  # kind → pages (or pictures)

    def add(self, kind: str, path: Path, pages: int) -> None:
        self.kinds.setdefault(kind, []).append(path)
        self.pages[kind] = self.pages.get(kind, 0) + pages


def build(folder: Path, pages: int) -> Corpus:
    """Write the corpus under ``folder``, a subfolder per kind (ingested one at a time)."""
    corpus = Corpus()
    rng, noise = random.Random(SEED), np.random.default_rng(SEED)
    for lang in LANGS:
        bodies = page_bodies(lang, pages, rng)
        images = [scan(page_image(body, lang, i, pages), noise) for i, body in enumerate(bodies)]
        scans = _write(folder / f"scan-{lang}" / f"scan-{lang}.pdf", _image_pdf(images))
        corpus.add(f"scan-{lang}", scans, pages)
        text = _write(folder / "text-pdf" / f"text-{lang}.pdf", text_pdf(bodies, lang))
        corpus.add("text-pdf", text, pages)
        png = folder / "png" / f"page-{lang}.png"
        png.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(scan(page_image(bodies[0], lang, 0, 0), noise)).save(png)
        corpus.add("png", png, 1)
        corpus.truth |= {scans.name: bodies, text.name: bodies, png.name: bodies[:1]}
    pictures = [picture(index) for index in range(PICTURES)]
    words = [word for _, drawn in pictures for word in drawn]
    docx = folder / "pictures-docx" / "pictures.docx"
    word_with_pictures(docx, [data for data, _ in pictures])
    corpus.add("pictures-docx", docx, PICTURES)
    pdf = _write(
        folder / "pictures-pdf" / "pictures.pdf", pdf_with_pictures([d for d, _ in pictures])
    )
    corpus.add("pictures-pdf", pdf, PICTURES)
    corpus.picture_words |= {docx.name: words, pdf.name: words}
    return corpus


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --- scanned and text pages ----------------------------------------------------------------


def page_bodies(lang: str, count: int, rng: random.Random) -> list[str]:
    """``count`` pages of ocr_set's sentences, each page in an order of its own, two
    paragraphs each. Not ocr_set.page_texts: it rotates one order by 3 sentences a page, so
    that from the fifth page on every page is the first again, and cleanup rightly takes
    the lines of 6 identical pages out of 10 for running headers."""
    return [one_page(lang, rng.sample(SENTENCES[lang], len(SENTENCES[lang]))) for _ in range(count)]


def page_image(body: str, lang: str, index: int, pages: int) -> np.ndarray:
    """The body rendered as ocr_set renders it, with the header and a footer ("Page 3 of
    10") drawn in the margins; none when ``pages`` is 0 (a picture of one page)."""
    image = render(body, lang, SIZE_PT, SCAN_DPI, font_path(lang, index))
    if not pages:
        return image
    canvas = Image.fromarray(image)
    draw = ImageDraw.Draw(canvas)
    face = ImageFont.truetype(FONTS["sans"], round(9 * SCAN_DPI / 72))
    draw.text((SCAN_DPI, SCAN_DPI // 2), HEADER, font=face, fill=0)
    bottom = canvas.height - SCAN_DPI * 3 // 4
    draw.text((SCAN_DPI, bottom), f"Page {index + 1} of {pages}", font=face, fill=0)
    return np.asarray(canvas)


def _image_pdf(images: list[np.ndarray]) -> bytes:
    """A PDF of page images only (JPEG inside, no text layer), A4 at the scan's dpi."""
    pil = [Image.fromarray(image) for image in images]
    buffer = io.BytesIO()
    pil[0].save(buffer, "PDF", save_all=True, append_images=pil[1:], resolution=SCAN_DPI)
    return buffer.getvalue()


def text_pdf(bodies: list[str], lang: str) -> bytes:
    """The same pages with a text layer (fpdf2), header and footer on each."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_margins(25, 20)
    pdf.add_font("body", fname=FONTS["cjk" if lang == "zh" else "serif"])
    pdf.add_font("sans", fname=FONTS["sans"])
    for number, body in enumerate(bodies, 1):
        pdf.add_page()
        pdf.set_font("sans", size=9)
        pdf.cell(0, 8, HEADER, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("body", size=SIZE_PT)
        for paragraph in body.split("\n\n"):
            pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        pdf.set_auto_page_break(False)  # else the footer, below the margin, opens a page
        pdf.set_y(-20)
        pdf.set_font("sans", size=9)
        pdf.cell(0, 8, f"Page {number} of {len(bodies)}")
        pdf.set_auto_page_break(True, 20)
    return bytes(pdf.output())


# --- pictures --------------------------------------------------------------------------------

_CHART_LABELS = [
    ("Quarterly revenue", ["North", "South", "East", "West"]),
    ("Tickets closed", ["January", "February", "March", "April"]),
    ("Server load", ["Berlin", "Dublin", "Tokyo", "Sydney"]),
]
# A line above each picture, each its own: lines alike but for their digits, at the top of
# most pages, are what cleanup takes for a running header.
CAPTIONS = [
    "Revenue grew in every region but the west.",
    "The support team closed more tickets each month.",
    "Tokyo carries the heaviest load at night.",
    "The backup settings as the operator sees them.",
    "Logging in asks for a second factor.",
    "The new warehouse seen from the car park.",
    "A meeting room after the refit.",
    "The loading bay at dawn.",
    "Samples from the spring harvest.",
    "The garden behind the office.",
]
_SCREEN_LINES = [
    ["Settings", "Backup schedule: nightly", "Retention: 35 days", "Region: Frankfurt"],
    ["Login", "Username: operator", "Password reset required", "Two factor code sent"],
]


def picture(index: int) -> tuple[bytes, list[str]]:
    """Picture ``index`` (PNG or JPEG bytes) and the words drawn in it: charts, then
    screenshots, then photos (no text) for the rest."""
    rng = random.Random(SEED * 100 + index)
    if index < len(_CHART_LABELS):
        image, words = _chart(*_CHART_LABELS[index], rng)
    elif index < len(_CHART_LABELS) + len(_SCREEN_LINES):
        image, words = _screenshot(_SCREEN_LINES[index - len(_CHART_LABELS)])
    else:
        return _jpeg(_photo(rng)), []
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue(), words


def _chart(title: str, labels: list[str], rng: random.Random) -> tuple[Image.Image, list[str]]:
    image = Image.new("RGB", (800, 500), "white")
    draw = ImageDraw.Draw(image)
    big, small = (ImageFont.truetype(FONTS["sans"], size) for size in (30, 22))
    draw.text((40, 20), title, font=big, fill="black")
    draw.line((80, 440, 760, 440), fill="black", width=2)
    for slot, label in enumerate(labels):
        height = rng.randrange(80, 330)
        left = 110 + slot * 160
        colour = (rng.randrange(40, 200), rng.randrange(40, 200), rng.randrange(40, 200))
        draw.rectangle((left, 440 - height, left + 90, 440), fill=colour)
        draw.text((left, 450), label, font=small, fill="black")
        draw.text((left + 20, 410 - height), str(height), font=small, fill="black")
    return image, title.split() + labels


def _screenshot(lines: list[str]) -> tuple[Image.Image, list[str]]:
    image = Image.new("RGB", (700, 300), (236, 236, 236))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 700, 40), fill=(40, 70, 140))
    face = ImageFont.truetype(FONTS["sans"], 22)
    draw.text((16, 8), lines[0], font=face, fill="white")
    for row, line in enumerate(lines[1:]):
        draw.text((30, 70 + row * 60), line, font=face, fill="black")
    words = [w.strip(":") for line in lines for w in line.split()]
    return image, [w for w in words if len(w) > 2]


def _photo(rng: random.Random) -> Image.Image:
    """Something like a photo: soft colour gradients, blurred shapes and sensor noise."""
    from PIL import ImageFilter

    size = (640, 480)
    noise = np.random.default_rng(rng.randrange(2**32))
    ys, xs = np.mgrid[0 : size[1], 0 : size[0]]
    channels = [
        np.clip(rng.randrange(60, 200) + 60 * np.sin(xs / rng.uniform(40, 200) + ys / 300), 0, 255)
        for _ in range(3)
    ]
    image = Image.fromarray(np.dstack(channels).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for _ in range(8):
        x, y, r = rng.randrange(640), rng.randrange(480), rng.randrange(20, 120)
        colour = tuple(rng.randrange(256) for _ in range(3))
        draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(6))
    pixels = np.asarray(image, dtype=np.float32) + noise.normal(0, 8, (size[1], size[0], 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


def word_with_pictures(path: Path, pictures: list[bytes]) -> None:
    """A .docx: a heading, then a paragraph and a picture by turns."""
    from docx import Document
    from docx.shared import Inches

    document = Document()
    document.add_heading("Operations review", 1)
    for index, data in enumerate(pictures, 1):
        document.add_paragraph(f"Figure {index}. {CAPTIONS[index - 1]}")
        document.add_picture(io.BytesIO(data), width=Inches(5))
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def pdf_with_pictures(pictures: list[bytes]) -> bytes:
    """A PDF of two pictures per page, each under a line of text."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_font("Helvetica", size=11)
    width = A4_INCHES[0] * 25.4 - 60
    for index, data in enumerate(pictures):
        if index % 2 == 0:
            pdf.add_page()
        pdf.multi_cell(0, 7, f"Figure {index + 1}. {CAPTIONS[index]}")
        pdf.image(io.BytesIO(data), x=30, w=width * 0.8, h=width * 0.5)
        pdf.ln(6)
    return bytes(pdf.output())
