"""OCR of scanned PDF pages and image files: the real Tesseract (tesserocr) and Debian's
language data on scans and screenshots generated here (tests/scans.py)."""

from __future__ import annotations

import contextlib
import io
import random
import re
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from knowhub.errors import LoaderError, OcrUnavailableError
from knowhub.ingest.loaders import Limits, OcrOptions, load
from knowhub.ingest.loaders.ocr import TESSDATA_DIRS, PageImage, looks_clean
from knowhub.models import LoadedDocument
from tests.scans import (
    blank_png,
    image_pdf,
    scanned_page,
    table_png,
    text_and_scan_pdf,
)

EN = "Nightly backups of the billing database are kept for 35 days in two regions."
ZH = "员工因公出差时，住宿费用每晚最高可以报销四百五十元，一线城市的标准为六百元。"
RU = "Ноутбуки зашифрованы ключом, который хранится в отделе ИТ, поэтому устройство можно стереть."
TYPED = "Typed page: the release checklist lives in the wiki."
ROWS = [
    ("Robot", "Battery", "Charge time"),
    ("Kestrel K2", "48 V / 40 Ah", "95 min"),
    ("Finch F1", "24 V / 20 Ah", "60 min"),
]
APT_FIX = "apt-get install tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-rus"


def limits(**ocr: object) -> Limits:
    return Limits(ocr=OcrOptions(**ocr))  # type: ignore[arg-type]


def squashed(text: str) -> str:
    """Letters and digits only: OCR wraps lines where the page did, and may take a full stop
    for a comma (those are not what a search finds a page by)."""
    return "".join(char for char in text if char.isalnum())


def page_of(document: LoadedDocument, phrase: str) -> int:
    offset = squashed(document.text).index(squashed(phrase))
    starts = [len(squashed(document.text[:start])) for start in document.page_starts]
    return sum(1 for start in starts if start <= offset)


@pytest.fixture(scope="module")
def three_page_scan() -> bytes:
    return image_pdf(
        [
            scanned_page(text, lang, seed)
            for seed, (text, lang) in enumerate([(EN, "en"), (ZH, "zh"), (RU, "ru")])
        ]
    )


def test_scanned_pdf_pages_are_read_in_their_languages_keeping_page_numbers(
    three_page_scan: bytes, tmp_path: Path
) -> None:
    seen: list[tuple[int, int]] = []
    document = load(tmp_path / "scan.pdf", three_page_scan, on_page=lambda *page: seen.append(page))
    assert [page_of(document, text) for text in (EN, ZH, RU)] == [1, 2, 3]
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert document.metadata == {"pages": 3, "ocr_pages": 3}
    assert document.warnings == ()
    assert re.search("[\u4e00-\u9fff] +[\u4e00-\u9fff]", document.text) is None  # joined


def test_a_pdf_keeps_its_text_pages_and_reads_its_scanned_one(tmp_path: Path) -> None:
    data = text_and_scan_pdf(TYPED, scanned_page(EN, "en"))
    document = load(tmp_path / "mixed.pdf", data)
    assert page_of(document, TYPED) == 1 and page_of(document, EN) == 2
    assert document.metadata["ocr_pages"] == 1


def test_with_ocr_off_a_scan_only_pdf_has_no_text_layer(
    three_page_scan: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "scan.pdf"
    # OcrUnavailableError: ingest skips the file rather than failing it.
    with pytest.raises(OcrUnavailableError, match=r"no text layer; enable ingest\.ocr") as info:
        load(path, three_page_scan, limits(enabled=False))
    assert str(info.value).startswith(str(path))
    mixed = load(path, text_and_scan_pdf(TYPED, scanned_page(EN, "en")), limits(enabled=False))
    assert squashed(mixed.text) == squashed(TYPED)
    assert mixed.warnings == (f"{path}: page 2: no text layer, not read; enable ingest.ocr",)


def test_with_ocr_off_an_image_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match=r"is an image and OCR is off; enable ingest\.ocr"):
        load(tmp_path / "table.png", table_png(ROWS), limits(enabled=False))


def test_without_language_data_the_text_pages_load_and_the_scan_says_how_to_fix_it(
    three_page_scan: bytes, tmp_path: Path
) -> None:
    empty = tmp_path / "tessdata"
    empty.mkdir()
    off = limits(tessdata=empty)
    with pytest.raises(OcrUnavailableError, match="OCR needs Tesseract's language data") as info:
        load(tmp_path / "scan.pdf", three_page_scan, off)
    assert APT_FIX in str(info.value) and "or set ingest.ocr: false" in str(info.value)
    mixed = load(tmp_path / "mixed.pdf", text_and_scan_pdf(TYPED, scanned_page(EN, "en")), off)
    assert squashed(mixed.text) == squashed(TYPED)
    (warning,) = mixed.warnings
    assert "page 2: scanned, not read: OCR needs Tesseract's language data" in warning
    with pytest.raises(LoaderError, match="is an image, not read: OCR needs"):
        load(tmp_path / "table.png", table_png(ROWS), off)


def test_without_tesserocr_ocr_says_to_install_it(
    three_page_scan: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tesserocr", None)  # import tesserocr: ImportError
    with pytest.raises(LoaderError, match=r"OCR needs tesserocr.*pip install tesserocr==2.13.0"):
        load(tmp_path / "scan.pdf", three_page_scan)


def test_with_some_languages_missing_ocr_reads_with_the_others_and_says_so(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tessdata"
    folder.mkdir()
    system = next(d for d in TESSDATA_DIRS if (d / "eng.traineddata").is_file())
    (folder / "eng.traineddata").symlink_to(system / "eng.traineddata")
    document = load(tmp_path / "table.png", table_png(ROWS), limits(tessdata=folder))
    assert "Kestrel K2" in document.text
    (warning,) = document.warnings
    assert "OCR read it without chi_sim+rus" in warning
    assert "apt-get install tesseract-ocr-chi-sim tesseract-ocr-rus" in warning


def test_a_table_screenshot_keeps_its_rows(tmp_path: Path) -> None:
    document = load(tmp_path / "table.png", table_png(ROWS))
    lines = [" ".join(line.replace("|", " ").split()) for line in document.text.splitlines()]
    assert "Robot Battery Charge time" in lines
    assert any(line.startswith("Kestrel K2") and line.endswith("95 min") for line in lines)
    assert document.format == "image" and document.page_starts == ()
    assert document.title == "Robot Battery Charge time"


def test_a_multi_page_tiff_is_read_page_by_page(tmp_path: Path) -> None:
    pages = [scanned_page(EN, "en", 1), scanned_page(RU, "ru", 2)]
    buffer = io.BytesIO()
    pages[0].save(buffer, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_lzw")
    seen: list[tuple[int, int]] = []
    document = load(tmp_path / "fax.tif", buffer.getvalue(), on_page=lambda *p: seen.append(p))
    assert page_of(document, EN) == 1 and page_of(document, RU) == 2
    assert seen == [(1, 2), (2, 2)]


def test_a_page_over_the_pixel_limit_is_refused_with_its_reason(
    three_page_scan: bytes, tmp_path: Path
) -> None:
    small = limits(max_pixels=2_000_000)  # an A4 page at 200 dpi is 3.9 megapixels
    refused = "pages 1-3: not read: 1653x2339 pixels at 200 dpi is over"
    with pytest.raises(LoaderError, match=refused) as info:
        load(tmp_path / "scan.pdf", three_page_scan, small)
    assert not isinstance(info.value, OcrUnavailableError)  # this one fails: OCR ran
    mixed = load(tmp_path / "mixed.pdf", text_and_scan_pdf(TYPED, scanned_page(EN, "en")), small)
    (warning,) = mixed.warnings
    assert "over ingest.ocr_max_megapixels (2); lower ingest.ocr_dpi or raise" in warning
    with pytest.raises(LoaderError, match=r"is 3000x1000 pixels, over ingest.ocr_max_megapixels"):
        load(tmp_path / "wide.png", blank_png(3000, 1000), small)


def test_an_image_without_text_or_not_an_image_fails_with_its_reason(tmp_path: Path) -> None:
    # Nothing to index (a diagram): skipped in a folder, as a scan OCR cannot read.
    with pytest.raises(OcrUnavailableError, match="is an image in which OCR found no text"):
        load(tmp_path / "blank.png", blank_png(400, 300))
    with pytest.raises(LoaderError, match="is not a readable image"):
        load(tmp_path / "fake.jpg", b"\xff\xd8\xff\xe0 this is not a JPEG at all")
    with pytest.raises(LoaderError, match="is not a readable image") as noise:
        load(tmp_path / "noise.png", b"no picture at all")
    # What it means, not Pillow's "cannot identify image file <_io.BytesIO object at 0x…>".
    assert "its bytes are of no image format knowhub reads" in str(noise.value)
    assert "BytesIO" not in str(noise.value)
    truncated = table_png(ROWS)[:400]
    with pytest.raises(LoaderError, match="is not a readable image"):
        load(tmp_path / "cut.png", truncated)


def test_a_16_bit_scan_is_read_as_its_grey_levels(tmp_path: Path) -> None:
    """convert("L") clips 16-bit grey at 255: the whole page came out white."""
    grey = np.asarray(scanned_page(EN, "en", 3).convert("L"), dtype=np.uint16) * 257
    buffer = io.BytesIO()
    frame = Image.fromarray(grey)
    assert frame.mode == "I;16"
    frame.save(buffer, "TIFF")
    document = load(tmp_path / "scan16.tif", buffer.getvalue())
    assert squashed("Nightly backups of the billing database") in squashed(document.text)


def test_a_corrupt_multi_page_tiff_is_a_loader_error_whatever_its_damage(tmp_path: Path) -> None:
    """Pillow parses a TIFF's later frames only when reached, raising what Image.open would
    have turned into its own error (TypeError, SyntaxError, struct.error …)."""
    frames = [Image.new("L", (48, 32), 255) for _ in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "TIFF", save_all=True, append_images=frames[1:])
    original = buffer.getvalue()
    rng = random.Random(7)
    for _ in range(150):
        damaged = bytearray(original)
        for _ in range(3):
            damaged[rng.randrange(8, len(damaged))] = rng.randrange(256)
        with contextlib.suppress(LoaderError):  # OcrUnavailableError (no text) included
            load(tmp_path / "fax.tif", bytes(damaged))


def test_clean_pages_are_told_from_scans_by_their_background() -> None:
    def page(image: Image.Image) -> PageImage:
        grey = image.convert("L")
        return PageImage(grey.tobytes(), grey.width, grey.height, grey.width, 200)

    assert looks_clean(page(Image.open(io.BytesIO(table_png(ROWS)))))
    assert not looks_clean(page(scanned_page(EN, "en")))


def _png_of_size(width: int, height: int) -> bytes:
    """A PNG that claims ``width`` x ``height`` pixels in a few bytes: its header, one
    empty data chunk, its end (a decompression bomb's shape, as far as Pillow opens it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit grey
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"") + chunk(b"IEND", b"")


def test_an_image_of_a_huge_pixel_count_is_refused_as_too_large_not_corrupt(
    tmp_path: Path,
) -> None:
    with pytest.raises(LoaderError) as info:
        load(tmp_path / "huge.png", _png_of_size(20_000, 20_000))
    assert str(info.value) == (
        f"{tmp_path / 'huge.png'}: is 400 megapixels, more than OCR reads of one picture "
        "(ingest.ocr_max_megapixels: 40): scale it down"
    )
