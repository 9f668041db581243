"""A price table inside a PDF through the whole pipeline: real SQLite, hybrid search
(hashing embedder) and page citations."""

from __future__ import annotations

from pathlib import Path

from knowhub import App
from tests.pdf_tables import table_pdf

ROWS = [
    ("Item", "Model", "Price, USD", "Lead time, weeks"),
    *[(f"NW-A{n:02}", f"Accessory kit {n}", str(400 + 10 * n), str(n % 6 + 1)) for n in range(30)],
    ("NW-O1000", "Osprey Lift OL-1000", "94800", "14"),
    *[(f"NW-B{n:02}", f"Spare part {n}", str(90 + n), "2") for n in range(30)],
]
INTRO = "Northwind price list. " + "Orders ship from the Rotterdam warehouse. " * 20


def test_a_question_on_one_row_finds_that_row_with_the_column_names(
    app: App, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "prices.pdf").write_bytes(table_pdf(ROWS, pages_before=[INTRO]))
    report = app.collection().ingest([folder])
    assert report.added == ["prices.pdf"] and report.failed == []
    hit = app.collection().search("price of the Osprey Lift OL-1000", top_k=1).hits[0]
    assert (hit.source, hit.page) == ("prices.pdf", 2)
    assert "| Item | Model | Price, USD | Lead time, weeks |" in hit.text
    assert "| NW-O1000 | Osprey Lift OL-1000 | 94800 | 14 |" in hit.text
    assert "Accessory kit 0 " not in hit.text  # a window of rows, not the whole table
