"""A PDF's outline through the whole pipeline: real SQLite, hybrid search (hashing
embedder), and a hit cited by its section and page."""

from __future__ import annotations

from pathlib import Path

from knowhub import App
from tests.pdf_outlines import Section, sectioned_pdf

GUIDE = [
    Section(1, "1", "Installation", "Install the Northwind server from its image. " * 8),
    Section(2, "1.1", "Network", "The gateway address is 10.0.2.1 on the school network. " * 6),
    Section(1, "2", "Backups", "Backups run every night at two o'clock. " * 8, new_page=True),
]


def test_a_pdf_hit_is_cited_by_its_outline_section_and_page(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.pdf").write_bytes(sectioned_pdf(GUIDE, outline=True))
    assert app.collection().ingest([folder]).added == ["guide.pdf"]
    hit = app.collection().search("gateway address of the school network", top_k=1).hits[0]
    assert (hit.source, hit.page, hit.section_path) == ("guide.pdf", 1, "Installation > Network")
