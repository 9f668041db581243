"""PDFs with sections, written by fpdf2 at test time: numbered headings set larger than the
body (bold where the font has a bold face), with or without an outline (bookmarks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

WQY = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
_SIZES = {1: 18, 2: 14, 3: 12}
_BODY_SIZE = 11


@dataclass(frozen=True)
class Section:
    """A heading ``label title`` at ``level`` and its body; ``new_page`` starts it on a page
    of its own, else it follows the previous section on the same page."""

    level: int
    label: str
    title: str
    body: str
    new_page: bool = False


def sectioned_pdf(sections: Sequence[Section], *, outline: bool, font: Path | None = None) -> bytes:
    """The sections in order, bookmarked (``outline``) under their titles, or not."""
    from fpdf import FPDF

    pdf = FPDF()
    family = "body" if font is not None else "helvetica"
    if font is not None:
        pdf.add_font("body", fname=str(font))
    pdf.add_page()
    for number, section in enumerate(sections):
        if section.new_page and number:
            pdf.add_page()
        # DejaVu or WenQuanYi come in one face: their headings are only larger.
        pdf.set_font(family, "B" if font is None else "", _SIZES[section.level])
        if outline:
            pdf.start_section(section.title, level=section.level - 1)
        heading = f"{section.label} {section.title}".strip()
        pdf.cell(0, 12, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font(family, "", _BODY_SIZE)
        pdf.multi_cell(0, 6, section.body, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    return bytes(pdf.output())
