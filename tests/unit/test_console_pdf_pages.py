"""Console page images: PNG encoding (checked against Pillow's decoder), PDFium rendering
within bounds, the page cache's size cap, and no half-written files left behind."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import numpy as np
import pytest
from fpdf import FPDF
from PIL import Image

from knowhub.errors import QueryError
from knowhub.interfaces.http.console.pdf_pages import (
    MAX_HEIGHT_PX,
    MAX_WIDTH_PX,
    PageImages,
    encode_png,
    render_page,
)


def _pdf(*sizes: tuple[float, float]) -> bytes:
    """One page per (width, height) in millimetres, each with a line of text."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for number, size in enumerate(sizes, 1):
        pdf.add_page(format=size)
        pdf.multi_cell(0, 10, f"Page number {number}")
    return bytes(pdf.output())


def _decoded(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def test_rgb_pixels_survive_png_encoding() -> None:
    pixels = np.random.default_rng(7).integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    image = _decoded(encode_png(pixels))
    assert image.mode == "RGB" and image.size == (7, 5)
    assert np.array_equal(np.asarray(image), pixels)


def test_grey_pixels_survive_png_encoding() -> None:
    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    image = _decoded(encode_png(pixels))
    assert image.mode == "L" and np.array_equal(np.asarray(image), pixels)


def test_an_a4_page_renders_readably_within_the_width() -> None:
    image = _decoded(render_page(_pdf((210, 297), (210, 297)), 2, "a4.pdf"))
    width, height = image.size
    assert 1000 <= width <= MAX_WIDTH_PX and height == pytest.approx(width * 297 / 210, rel=0.01)
    pixels = np.asarray(image)
    assert pixels.min() < 100 and pixels.max() == 255  # dark text on a white page


def test_huge_pages_are_shrunk_to_the_bounds() -> None:
    wide, tall = _pdf((3000, 200)), _pdf((200, 5000))
    assert _decoded(render_page(wide, 1, "wide.pdf")).size[0] <= MAX_WIDTH_PX
    assert _decoded(render_page(tall, 1, "tall.pdf")).size[1] <= MAX_HEIGHT_PX


def test_a_page_past_the_end_is_refused() -> None:
    with pytest.raises(QueryError, match=r"short\.pdf has no page 2 \(its pages: 1-1\)"):
        render_page(_pdf((210, 297)), 2, "short.pdf")
    with pytest.raises(QueryError, match="no page 0"):
        render_page(_pdf((210, 297)), 0, "short.pdf")


def test_an_unreadable_pdf_is_named() -> None:
    with pytest.raises(QueryError, match=r"broken\.pdf is not a readable PDF"):
        render_page(b"%PDF-1.7 truncated", 1, "broken.pdf")


def test_a_stored_page_is_read_back(tmp_path: Path) -> None:
    cache = PageImages(tmp_path / "pages")
    assert cache.cached("abc", 1) is None
    cache.store("abc", 1, b"png bytes")
    assert cache.cached("abc", 1) == b"png bytes"
    assert [p.name for p in (tmp_path / "pages").iterdir()] == ["abc-p1.png"]


def test_the_least_recently_used_pages_go_past_the_cap(tmp_path: Path) -> None:
    cache = PageImages(tmp_path, max_bytes=250)
    for page in (1, 2):
        cache.store("doc", page, b"x" * 100)
        os.utime(cache.path("doc", page), ns=(page * 10**9, page * 10**9))
    assert cache.cached("doc", 1) is not None  # read: now the most recently used
    cache.store("doc", 3, b"x" * 100)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc-p1.png", "doc-p3.png"]


def test_a_failed_write_leaves_no_part_file(tmp_path: Path) -> None:
    cache = PageImages(tmp_path)
    (tmp_path / "doc-p1.png" / "inside").mkdir(parents=True)  # a folder there: the rename fails
    with pytest.raises(OSError):
        cache.store("doc", 1, b"png bytes")
    assert not list(tmp_path.glob("*.part"))


def test_a_crash_s_part_files_are_swept_by_a_later_write(tmp_path: Path) -> None:
    cache = PageImages(tmp_path)
    stale, fresh = tmp_path / "tmpcrashed.part", tmp_path / "tmpwriting.part"
    for part in (stale, fresh):
        part.write_bytes(b"half a png")
    day_ago = time.time() - 86_400
    os.utime(stale, (day_ago, day_ago))
    cache.store("doc", 1, b"png bytes")
    # The young one may be another worker's, being written right now: it stays.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc-p1.png", "tmpwriting.part"]
