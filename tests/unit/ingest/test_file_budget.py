"""What reading one file may cost: ``ingest.ocr_max_pages`` and
``ingest.max_seconds_per_file``. A file over either fails with the setting named; a scan's
page count is checked before its pages are read where the file says it (a TIFF's frames).

The time limit is given as a microsecond, which any file takes longer than to read: the
tests see where reading stopped, never how long it took."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from knowhub.errors import LoaderError
from knowhub.ingest.loaders import Limits, OcrOptions, load
from knowhub.ingest.loaders.budget import Deadline
from knowhub.ingest.loaders.ocr import Ocr
from tests.helpers import WAIT_S
from tests.scans import image_pdf, scanned_page

EN = "Nightly backups of the billing database are kept for 35 days in two regions."
PAGES = 3


@pytest.fixture(scope="module")
def pages() -> list[Image.Image]:
    return [scanned_page(EN, "en", seed) for seed in range(PAGES)]


@pytest.fixture(scope="module")
def tiff(pages: list[Image.Image]) -> bytes:
    buffer = io.BytesIO()
    pages[0].save(buffer, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_lzw")
    return buffer.getvalue()


def _failure(path: Path, data: bytes, limits: Limits, seen: list[int] | None = None) -> str:
    def page_read(page: int, pages: int) -> None:
        if seen is not None:
            seen.append(page)

    with pytest.raises(LoaderError) as info:
        load(path, data, limits, on_page=page_read)
    return str(info.value)


def test_a_tiff_of_more_pages_than_ocr_max_pages_is_refused_before_any_is_read(
    tiff: bytes, tmp_path: Path
) -> None:
    seen: list[int] = []
    path = tmp_path / "fax.tif"
    assert _failure(path, tiff, Limits(ocr=OcrOptions(max_pages=2)), seen) == (
        f"{path}: has 3 pages to read by OCR, over ingest.ocr_max_pages (2): split it, or "
        "raise the limit (0: none)"
    )
    assert seen == []


def test_a_pdf_with_more_scanned_pages_than_ocr_max_pages_fails(
    pages: list[Image.Image], tmp_path: Path
) -> None:
    path = tmp_path / "scan.pdf"
    assert _failure(path, image_pdf(pages), Limits(ocr=OcrOptions(max_pages=2))) == (
        f"{path}: has more than 2 pages to read by OCR (the 3rd is page 3 of 3), over "
        "ingest.ocr_max_pages (2): split it, or raise the limit (0: none)"
    )


def test_scans_within_ocr_max_pages_are_read(tiff: bytes, tmp_path: Path) -> None:
    document = load(tmp_path / "fax.tif", tiff, Limits(ocr=OcrOptions(max_pages=PAGES)))
    assert len(document.page_starts) == PAGES


@pytest.mark.parametrize("name", ["fax.tif", "scan.pdf"])
def test_a_scan_not_read_in_time_fails_naming_max_seconds_per_file(
    name: str, tiff: bytes, pages: list[Image.Image], tmp_path: Path
) -> None:
    data = tiff if name.endswith(".tif") else image_pdf(pages)
    seen: list[int] = []
    message = _failure(tmp_path / name, data, Limits(deadline=Deadline(1e-6)), seen)
    assert message == (
        f"{tmp_path / name}: not read within ingest.max_seconds_per_file (1e-06 s) (stopped "
        f"at page 1 of {PAGES}): split the file, or raise the limit (0: none)"
    )
    assert seen == []


class _EndsWithTheOcr(Deadline):
    """A deadline that passes as the OCR of a page returns (Tesseract, handed the time
    left, returns right at the deadline)."""

    def __init__(self) -> None:
        super().__init__(WAIT_S)
        self.ended = False

    def passed(self) -> bool:
        return self.ended


@pytest.mark.parametrize("name", ["fax.tif", "scan.pdf"])
def test_a_scan_whose_ocr_ends_at_the_deadline_fails_naming_its_page(
    name: str,
    tiff: bytes,
    pages: list[Image.Image],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The failure says at which page, not "after 0 characters" (counting that page's text).
    deadline = _EndsWithTheOcr()

    def read_until_the_deadline(self: Ocr, image: object) -> str:
        deadline.ended = True
        return EN

    monkeypatch.setattr(Ocr, "read", read_until_the_deadline)
    data = tiff if name.endswith(".tif") else image_pdf(pages)
    message = _failure(tmp_path / name, data, Limits(deadline=deadline))
    assert re.search(rf"\(stopped at page [1-{PAGES}] of {PAGES}\)", message), message


def test_a_large_page_not_parsed_in_time_fails_naming_max_seconds_per_file(
    tmp_path: Path,
) -> None:
    page = "<html><body>" + "<p>Backups run <b>nightly</b>.</p>\n" * 5000 + "</body></html>"
    path = tmp_path / "long.html"
    assert _failure(path, page.encode(), Limits(deadline=Deadline(1e-6))) == (
        f"{path}: not read within ingest.max_seconds_per_file (1e-06 s) (stopped while "
        "reading its HTML): split the file, or raise the limit (0: none)"
    )


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Snapshots run every six hours.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["job", "every"])
    book.active.append(["backup", "6h"])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("settings.json", lambda: b'{"backups": {"every": "six hours"}}'),
        ("notes.docx", _docx),
        ("jobs.xlsx", _xlsx),
    ],
)
def test_a_structured_document_stops_once_the_files_time_is_up(
    name: str, data: Callable[[], bytes], tmp_path: Path
) -> None:
    # Its loader counts the text as it goes (CharBudget): where a large workbook or
    # document is stopped, rather than once it has been read whole.
    message = _failure(tmp_path / name, data(), Limits(deadline=Deadline(1e-6)))
    assert message.startswith(f"{tmp_path / name}: not read within ingest.max_seconds_per_file")
    assert "(stopped after " in message and " characters)" in message
