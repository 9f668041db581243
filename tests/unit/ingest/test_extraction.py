"""When a document whose file did not change is read again: only when a run can extract
more of it than was (tested end to end in tests/integration/test_ingest_ocr.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from knowhub.config import load_settings
from knowhub.ingest.extraction import EXTRACTION_VERSION, TEXT_EXTRACTION_VERSION, Extraction
from knowhub.ingest.loaders.ocr import OcrOptions
from knowhub.models import DocumentImage, DocumentRecord, LoadedDocument


def _extraction(tmp_path: Path, ocr: bool = True, dpi: int = 200, **values: Any) -> Extraction:
    settings = load_settings(env={}, overrides={"data_dir": tmp_path, **values})
    return Extraction(settings, OcrOptions(enabled=ocr, dpi=dpi))


def _record(format_name: str, own: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        "default", "a", "/a", "h" * 64, 1, 1, "A", format_name, 1, 1, 1, "now", {"knowhub": own}
    )


def _loaded(format_name: str, **fields: Any) -> LoadedDocument:
    return LoadedDocument(text="x", title="x", format=format_name, line_map=None, **fields)


def test_a_record_from_before_or_of_an_older_version_is_read_again(tmp_path: Path) -> None:
    run = _extraction(tmp_path)
    assert run.stale(_record("pdf", {"doc_id": "d"}))
    assert run.stale(_record("docx", {"extraction": {"version": EXTRACTION_VERSION - 1}}))
    assert not run.stale(_record("markdown", {"doc_id": "d"}))  # depends on none of it
    facts = run.record(_loaded("pdf"))
    assert facts == {"version": EXTRACTION_VERSION, "pictures": True}
    assert not run.stale(_record("pdf", {"extraction": facts}))
    assert run.record(_loaded("html")) is None


def test_unread_pages_wait_for_an_ocr_that_runs_with_other_settings(tmp_path: Path) -> None:
    off = _extraction(tmp_path, ocr=False)
    facts = off.record(_loaded("pdf", unread_pages=(2, 3)))
    assert facts is not None and facts["unread_pages"] == 2 and facts["ocr"] == ""
    assert not off.stale(_record("pdf", {"extraction": facts}))  # OCR still off
    on = _extraction(tmp_path)  # Tesseract and its data are installed here
    assert on.ocr_key and on.stale(_record("pdf", {"extraction": facts}))
    refused = on.record(_loaded("pdf", unread_pages=(4,)))  # too large at this dpi
    assert not on.stale(_record("pdf", {"extraction": refused}))
    assert _extraction(tmp_path, dpi=150).stale(_record("pdf", {"extraction": refused}))


def test_uncaptioned_pictures_wait_for_a_vision_model(tmp_path: Path) -> None:
    picture = DocumentImage("a" * 64, "image/png", 80, 80, 1, "a chart", "ocr", 0, 1)
    plain = _extraction(tmp_path)
    facts = plain.record(_loaded("pptx", images=(picture,)))
    assert facts is not None and facts["uncaptioned"] == 1 and facts["vision"] == ""
    assert not plain.stale(_record("pptx", {"extraction": facts}))
    vision = {"llm.provider": "ollama", "ingest.images.vision_model": "llava"}
    assert _extraction(tmp_path, **vision).stale(_record("pptx", {"extraction": facts}))
    unextracted = _extraction(tmp_path, **{"ingest.images.extract": False})
    none_kept = unextracted.record(_loaded("docx"))
    assert plain.stale(_record("docx", {"extraction": none_kept}))  # pictures now wanted
    assert not unextracted.stale(_record("docx", {"extraction": none_kept}))


def test_a_notebooks_uncaptioned_plots_wait_for_a_vision_model(tmp_path: Path) -> None:
    plot = DocumentImage("b" * 64, "image/png", 640, 480, None, "", "", 0, 1)
    facts = _extraction(tmp_path).record(_loaded("ipynb", images=(plot,)))
    assert facts is not None and facts["uncaptioned"] == 1
    vision = {"llm.provider": "ollama", "ingest.images.vision_model": "llava"}
    assert _extraction(tmp_path, **vision).stale(_record("ipynb", {"extraction": facts}))
    assert not _extraction(tmp_path).stale(_record("ipynb", {"extraction": facts}))


def test_what_ocr_read_is_never_read_again_without_ocr(tmp_path: Path) -> None:
    picture = DocumentImage("a" * 64, "image/png", 80, 80, 1, "a chart", "ocr", 0, 1)
    on = _extraction(tmp_path)
    facts = on.record(_loaded("pdf", images=(picture,), metadata={"ocr_pages": 1}))
    assert facts is not None and facts["ocr_read"]
    vision_without_ocr = _extraction(
        tmp_path, ocr=False, **{"llm.provider": "ollama", "ingest.images.vision_model": "llava"}
    )
    assert not vision_without_ocr.stale(_record("pdf", {"extraction": facts}))
    old = _record("pdf", {"doc_id": "d"})  # from before: OCR read its pages
    old = DocumentRecord(**{**old.__dict__, "metadata": {**old.metadata, "ocr_pages": 2}})
    assert not _extraction(tmp_path, ocr=False).stale(old) and on.stale(old)


def test_pictures_a_vision_model_failed_on_are_asked_again(tmp_path: Path) -> None:
    vision = {"llm.provider": "ollama", "ingest.images.vision_model": "llava"}
    run = _extraction(tmp_path, **vision)
    failed = DocumentImage("a" * 64, "image/png", 80, 80, 1, "Site map", "alt", 0, 1)
    facts = run.record(_loaded("docx", images=(failed,)))
    assert run.stale(_record("docx", {"extraction": facts}))
    captioned = DocumentImage("a" * 64, "image/png", 80, 80, 1, "A map.", "vision", 0, 1)
    facts = run.record(_loaded("docx", images=(captioned,)))
    assert not run.stale(_record("docx", {"extraction": facts}))


def test_plain_text_read_before_its_sections_were_found_is_read_again_once(
    tmp_path: Path,
) -> None:
    run = _extraction(tmp_path)
    assert run.stale(_record("text", {"doc_id": "d"}))  # indexed before: no record
    facts = run.record(_loaded("text"))
    assert facts == {"version": TEXT_EXTRACTION_VERSION}
    assert not run.stale(_record("text", {"extraction": facts}))
    unpictured = _extraction(tmp_path, ocr=False, **{"ingest.images.extract": False})
    assert not unpictured.stale(_record("text", {"extraction": facts}))  # it has no scans
    assert run.stale(_record("text", {"extraction": {"version": TEXT_EXTRACTION_VERSION - 1}}))
