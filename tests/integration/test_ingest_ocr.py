"""Scans and screenshots through the whole pipeline: real Tesseract and language data, real
SQLite, hybrid search (hashing embedder) and citations."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.ingest.loaders.ocr import TESSDATA_DIRS
from knowhub.ingest.pipeline import IngestProgress
from tests.helpers import fast_settings, write
from tests.scans import blank_png, image_pdf, scanned_page, table_png, text_and_scan_pdf

PAGES = [
    ("Visitors to the Harbour Street office sign in at the front desk and wear a badge.", "en"),
    ("金额超过五万元的发票需要第二人签字，付款期限超过六十天的合同需要财务部批准。", "zh"),
    ("Доступ к финансовой папке выдаёт руководитель группы раз в квартал.", "ru"),
]
ROWS = [
    ("Robot", "Battery", "Charge time"),
    ("Kestrel K2", "48 V / 40 Ah", "95 min"),
    ("Osprey Lift", "48 V / 80 Ah", "140 min"),
]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A folder with a 3-page scan (en, zh, ru), a table screenshot and a Markdown note."""
    folder = tmp_path / "docs"
    pages = [scanned_page(text, lang, seed) for seed, (text, lang) in enumerate(PAGES)]
    folder.mkdir()
    (folder / "scan.pdf").write_bytes(image_pdf(pages))
    (folder / "robots.png").write_bytes(table_png(ROWS))
    write(folder / "note.md", "# Note\n\nThe canteen opens at noon.\n")
    return folder


def test_a_sentence_of_a_scans_page_2_finds_that_page_first(app: App, docs: Path) -> None:
    steps: list[IngestProgress] = []
    report = app.collection().ingest([docs], progress=steps.append)
    assert sorted(report.added) == ["note.md", "robots.png", "scan.pdf"]
    assert report.failed == [] and report.warnings == []
    hit = app.collection().search("发票金额超过五万元需要谁签字？", top_k=3).hits[0]
    assert (hit.source, hit.page) == ("scan.pdf", 2)
    assert "第二人签字" in hit.text
    reads = [(s.source, s.page, s.pages) for s in steps if s.event == "page_read"]
    assert reads == [
        ("robots.png", 1, 1),
        ("scan.pdf", 1, 3),
        ("scan.pdf", 2, 3),
        ("scan.pdf", 3, 3),
    ]
    russian = app.collection().search("кто выдаёт доступ к финансовой папке", top_k=1).hits[0]
    assert (russian.source, russian.page) == ("scan.pdf", 3)


def test_a_table_screenshot_is_found_by_one_of_its_cells(app: App, docs: Path) -> None:
    app.collection().ingest([docs])
    hit = app.collection().search("Osprey Lift charge time", top_k=1).hits[0]
    assert hit.source == "robots.png" and hit.page is None
    assert "140 min" in hit.text


def test_a_compressed_scan_and_screenshot_are_read_by_ocr(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "packed"
    folder.mkdir()
    (folder / "robots.png.gz").write_bytes(gzip.compress(table_png(ROWS)))
    scan = image_pdf([scanned_page(PAGES[0][0], "en")])
    (folder / "visitors.pdf.xz").write_bytes(lzma.compress(scan))
    report = app.collection().ingest([folder])
    assert sorted(report.added) == ["robots.png.gz", "visitors.pdf.xz"], report.failed
    hit = app.collection().search("Osprey Lift charge time", top_k=1).hits[0]
    assert hit.source == "robots.png.gz" and "140 min" in hit.text
    hit = app.collection().search("sign in at the front desk", top_k=1).hits[0]
    assert (hit.source, hit.page) == ("visitors.pdf.xz", 1)


def test_with_ocr_off_scans_are_skipped_as_having_no_text_layer(tmp_path: Path, docs: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data", **{"ingest.ocr": False}))
    try:
        report = app.collection().ingest([docs])
        assert report.ok and report.added == ["note.md"]
        assert report.skipped == [
            ("robots.png", "robots.png: is an image and OCR is off; enable ingest.ocr to read it"),
            ("scan.pdf", "scan.pdf: no text layer; enable ingest.ocr to read its scans"),
        ]
        named = app.collection().ingest([docs / "scan.pdf"])  # asked for by name: it fails
        ((source, reason),) = named.failed
        assert source == "scan.pdf" and "no text layer; enable ingest.ocr" in reason
    finally:
        app.close()


def test_turning_ocr_off_keeps_the_scans_indexed_before(app: App, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "robots.png").write_bytes(table_png(ROWS))
    app.collection().ingest([docs])
    (docs / "robots.png").write_bytes(table_png([*ROWS, ("Finch F1", "24 V", "60 min")]))
    off = build_app(fast_settings(tmp_path / "data", **{"ingest.ocr": False}))
    try:
        report = off.collection().ingest([docs], prune=True)
        assert report.removed == [] and [s for s, _ in report.skipped] == ["robots.png"]
        assert (
            off.collection().search("Osprey Lift charge time", top_k=1).hits[0].source
            == "robots.png"
        )
    finally:
        off.close()


def test_without_language_data_each_scan_says_how_to_fix_it_and_the_rest_ingests(
    tmp_path: Path, docs: Path
) -> None:
    empty = tmp_path / "no-tessdata"
    empty.mkdir()
    (docs / "mixed.pdf").write_bytes(
        text_and_scan_pdf("Typed page about the parking rules.", scanned_page(PAGES[0][0], "en"))
    )
    settings = fast_settings(tmp_path / "data", **{"ingest.ocr_tessdata": str(empty)})
    app = build_app(settings)
    try:
        report = app.collection().ingest([docs])
        assert report.ok and sorted(report.added) == ["mixed.pdf", "note.md"]
        assert [source for source, _ in report.skipped] == ["robots.png", "scan.pdf"]
        fix = "apt-get install tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-rus"
        assert all("OCR needs Tesseract's language data" in r for _, r in report.skipped)
        assert all(fix in reason for _, reason in report.skipped)
        ((source, warning),) = report.warnings
        assert source == "mixed.pdf" and "page 2: scanned, not read: OCR needs" in warning
        assert app.collection().search("parking rules", top_k=1).hits[0].source == "mixed.pdf"
    finally:
        app.close()


def test_an_image_without_text_in_a_folder_is_skipped_not_failed(app: App, tmp_path: Path) -> None:
    folder = tmp_path / "site"
    write(folder / "guide.md", "# Guide\n\nThe architecture is drawn below.\n")
    (folder / "img" / "diagram.png").parent.mkdir()
    (folder / "img" / "diagram.png").write_bytes(blank_png(400, 300))
    report = app.collection().ingest([folder])
    assert report.ok and report.added == ["guide.md"] and report.failed == []
    ((source, reason),) = report.skipped
    assert source == "img/diagram.png" and "OCR found no text" in reason


def _mixed(docs: Path) -> None:
    docs.mkdir(exist_ok=True)
    (docs / "mixed.pdf").write_bytes(
        text_and_scan_pdf("Typed page about the parking rules.", scanned_page(PAGES[0][0], "en"))
    )


def _pages_of(app: App, query: str) -> list[int | None]:
    return [h.page for h in app.collection().search(query, top_k=5).hits if h.source == "mixed.pdf"]


def test_scans_left_unread_are_read_once_ocr_can_and_only_then(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", tmp_path / "data"
    _mixed(docs)
    for _ in range(2):  # OCR off: page 2 unread, and not read again while OCR stays off
        off = build_app(fast_settings(data, **{"ingest.ocr": False}))
        try:
            report = off.collection().ingest([docs])
            assert 2 not in _pages_of(off, "Harbour Street front desk badge")
        finally:
            off.close()
    assert report.unchanged == ["mixed.pdf"]
    on = build_app(fast_settings(data))
    try:
        assert on.collection().ingest([docs]).updated == ["mixed.pdf"]  # OCR can now: read again
        assert _pages_of(on, "Harbour Street front desk badge")[0] == 2
        assert on.collection().ingest([docs]).unchanged == ["mixed.pdf"]  # all read: no OCR again
    finally:
        on.close()
    off = build_app(fast_settings(data, **{"ingest.ocr": False}))
    try:  # OCR off again: what it read stays indexed
        assert off.collection().ingest([docs]).unchanged == ["mixed.pdf"]
        assert _pages_of(off, "Harbour Street front desk badge")[0] == 2
    finally:
        off.close()


def test_scans_are_read_once_the_language_data_is_installed(tmp_path: Path) -> None:
    docs, data, tessdata = tmp_path / "docs", tmp_path / "data", tmp_path / "tessdata"
    _mixed(docs)
    tessdata.mkdir()  # the same settings throughout: only the folder's content changes
    app = build_app(fast_settings(data, **{"ingest.ocr_tessdata": str(tessdata)}))
    try:
        assert app.collection().ingest([docs]).added == ["mixed.pdf"]
        assert app.collection().ingest([docs]).unchanged == ["mixed.pdf"]
        for model in _system_tessdata().glob("*.traineddata"):
            (tessdata / model.name).symlink_to(model)  # "installed"
        assert app.collection().ingest([docs]).updated == ["mixed.pdf"]
        assert _pages_of(app, "Harbour Street front desk badge")[0] == 2
    finally:
        app.close()


def _system_tessdata() -> Path:
    return next(d for d in TESSDATA_DIRS if (d / "eng.traineddata").is_file())


def test_a_new_scope_is_written_onto_scans_that_cannot_be_read_again(tmp_path: Path) -> None:
    from knowhub.scope import Scope

    docs, data = tmp_path / "docs", tmp_path / "data"
    _mixed(docs)
    app = build_app(fast_settings(data))
    try:
        assert app.collection().ingest([docs], tags={"visibility": "public"}).added == ["mixed.pdf"]
    finally:
        app.close()
    public_only = Scope.of(["*"], ["*"], "public", ["*"])
    off = build_app(fast_settings(data, **{"ingest.ocr": False}))
    try:
        assert _pages_of(off.scoped(public_only), "Harbour Street front desk badge")[0] == 2
        # OCR cannot run: a re-read would drop page 2, so the tag is written onto the chunks.
        report = off.collection().ingest([docs], tags={"visibility": "restricted"})
        assert report.retagged == ["mixed.pdf"] and report.ok
        assert _pages_of(off, "Harbour Street front desk badge")[0] == 2  # page 2 kept
        assert _pages_of(off.scoped(public_only), "Harbour Street front desk badge") == []
        (record,) = off.collection().documents()
        assert record.metadata["tags"]["visibility"] == "restricted"
        assert {
            c.metadata["visibility"]
            for c in off.collection(record.collection).document_chunks(record)
        } == {"restricted"}
        assert off.collection().ingest([docs]).unchanged == ["mixed.pdf"]  # written once
    finally:
        off.close()


def test_a_file_that_no_longer_loads_still_gets_its_new_scope(tmp_path: Path) -> None:
    from knowhub.scope import Scope

    docs, data = tmp_path / "docs", tmp_path / "data"
    write(docs / "note.pdf", "")
    (docs / "note.pdf").write_bytes(
        text_and_scan_pdf("Typed page about the parking rules.", scanned_page(PAGES[0][0], "en"))
    )
    app = build_app(fast_settings(data))
    try:
        app.collection().ingest([docs], tags={"visibility": "public"})
        (docs / "note.pdf").write_bytes(b"%PDF-1.7 damaged")  # now unreadable
        report = app.collection().ingest([docs], tags={"visibility": "restricted"})
        ((source, reason),) = report.failed
        assert source == "note.pdf" and "not a readable PDF" in reason
        ((_, warning),) = report.warnings
        assert "its new tags and scope were applied to what was indexed" in warning
        public_only = app.scoped(Scope.of(["*"], ["*"], "public", ["*"]))
        assert public_only.collection().search("parking rules", top_k=3).hits == []
        assert app.collection().search("parking rules", top_k=1).hits[0].source == "note.pdf"
    finally:
        app.close()
