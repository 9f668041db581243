"""Cleanup end to end: a PDF's running header and footer never reach a chunk, a word split
across lines is found whole, and pages are still cited right."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from knowhub import App, build_app
from tests.helpers import fast_settings

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
BODIES = [
    "Parking is free for visitors in the north lot.",
    "The cafeteria opens at seven. Ask the front desk for infor-\nmation about badges.",
    "Fire drills happen every quarter on a Tuesday.",
    "Laptops must be locked with a cable when left alone.",
]


def _handbook(path: Path) -> Path:
    """Four pages, each with the running header and footer a word processor prints."""
    pdf = FPDF()
    pdf.add_font("body", fname=str(DEJAVU))
    pdf.set_font("body", size=11)
    for number, body in enumerate(BODIES, start=1):
        pdf.add_page()
        pdf.multi_cell(0, 8, f"ACME Confidential — Page {number}\n\n{body}\n\n")
        pdf.multi_cell(0, 8, f"Handbook v3 · printed 2024-05-0{number} · {number}/4")
    path.write_bytes(bytes(pdf.output()))
    return path


def _chunks(app: App) -> list[str]:
    collection = app.collection()
    return [
        hit.text for record in collection.documents() for hit in collection.document_chunks(record)
    ]


def test_pdf_furniture_never_reaches_a_chunk_and_pages_are_cited(app: App, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _handbook(docs / "handbook.pdf")
    assert app.collection().ingest([docs]).ok
    texts = _chunks(app)
    assert texts and not any("ACME" in t or "printed" in t for t in texts)
    hit = app.collection().search("information").hits[0]
    assert hit.page == 2 and "information about badges" in hit.text
    assert app.collection().search("fire drills quarter").hits[0].page == 3


def test_with_cleanup_off_the_text_is_as_extracted(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _handbook(docs / "handbook.pdf")
    app = build_app(fast_settings(tmp_path / "data", **{"ingest.cleanup": False}))
    try:
        assert app.collection().ingest([docs]).ok
        texts = _chunks(app)
        assert any("ACME Confidential" in t for t in texts)
        assert any("infor\x02mation" in t for t in texts)  # PDFium's line-end hyphen
    finally:
        app.close()
