"""PDFs with tables, written by fpdf2 at test time: prose, a table (ruled or not), prose."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
WQY = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")

PRICES = [
    ("Item", "Model", "Price, USD", "Weight, kg"),
    ("NW-K200", "Kestrel AMR-200", "31500", "180"),
    ("NW-O1000", "Osprey Lift OL-1000", "94800", "640"),
    ("NW-WD1", "Wren Dock WD-1", "3750", "25"),
]


def table_pdf(
    rows: Sequence[Sequence[str]],
    *,
    ruled: bool = True,
    before: str = "Prices as of October, excluding delivery.",
    after: str = "Delivery is quoted separately.",
    font: Path | None = None,
    pages_before: Sequence[str] = (),
    widths: Sequence[int] | None = None,
) -> bytes:
    """Pages of prose, then a page of ``before``, the table and ``after``."""
    from fpdf import FPDF
    from fpdf.fonts import FontFace

    pdf = FPDF()
    if font is not None:
        pdf.add_font("body", fname=str(font))
        pdf.set_font("body", size=11)
    else:
        pdf.set_font("helvetica", size=11)
    for text in pages_before:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.add_page()
    pdf.multi_cell(0, 6, before)
    pdf.ln(4)
    # A plain heading style: a bold face would need a second font file for DejaVu.
    layout = "ALL" if ruled else "NONE"
    with pdf.table(borders_layout=layout, headings_style=FontFace(), col_widths=widths) as table:
        for values in rows:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.ln(4)
    pdf.multi_cell(0, 6, after)
    return bytes(pdf.output())
