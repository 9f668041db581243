"""A PDF page as a PNG image, rendered once by PDFium and kept in a bounded cache.

The image is keyed by the document's content hash and page, so a cached page can never be
of other bytes than the ones indexed; the cache is a cache (rebuildable, any file may go),
capped in bytes with the least recently used pages evicted first. A page is written to a
``.part`` file of its own and renamed into place; one left by a failed write is deleted at
once, and one left by a crash is swept by a later write once :data:`STALE_PART_S` old (a
younger one may be another worker's, still being written), so leftovers never pile up.

Pages are encoded here (zlib + the PNG chunk layout, RFC 2083) from the pixels
``pypdfium2`` hands over as a numpy array: Pillow, which ``to_pil()`` needs, is no runtime
dependency of knowhub.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.errors import QueryError
from knowhub.ingest.loaders.pdf import PDFIUM_LOCK  # PDFium is not thread-safe: one lock

__all__ = [
    "CACHE_BYTES",
    "MAX_HEIGHT_PX",
    "MAX_WIDTH_PX",
    "STALE_PART_S",
    "PageImages",
    "encode_png",
    "render_page",
]

MAX_WIDTH_PX = 1200  # wide enough to read on a desktop, small enough to send quickly
MAX_HEIGHT_PX = 2400  # a poster-sized page is shrunk rather than rendered a metre tall
MAX_SCALE = 2.0  # 144 dpi at most: sharper adds bytes, not legibility
CACHE_BYTES = 256 * 2**20
STALE_PART_S = 600.0  # no page takes this long to write: a .part this old is a crash's
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PageImages:
    """Rendered pages under ``folder`` (``DATA_DIR/cache/pages``), at most ``max_bytes``."""

    def __init__(self, folder: Path, max_bytes: int = CACHE_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes

    def path(self, doc_hash: str, page: int) -> Path:
        return self.folder / f"{doc_hash}-p{page}.png"

    def cached(self, doc_hash: str, page: int) -> bytes | None:
        """The page's image if it was rendered before (and marks it recently used)."""
        found = self.path(doc_hash, page)
        try:
            data = found.read_bytes()
            os.utime(found)  # eviction goes by mtime: a page read stays
        except FileNotFoundError:
            return None
        return data

    def store(self, doc_hash: str, page: int, png: bytes) -> None:
        """Keep ``png`` (written whole, then renamed: a reader never sees half a file)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=self.folder, suffix=".part")
        temporary = Path(name)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(png)
            temporary.replace(self.path(doc_hash, page))
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self.sweep()
        self.evict()

    def sweep(self) -> None:
        """Delete ``.part`` files older than :data:`STALE_PART_S` (left by a crash)."""
        stale = time.time() - STALE_PART_S
        for item in self.folder.glob("*.part"):
            with contextlib.suppress(FileNotFoundError):  # another worker swept it
                if item.stat().st_mtime < stale:
                    item.unlink()

    def evict(self) -> None:
        """Remove the least recently used pages until the cache fits ``max_bytes``."""
        entries = []
        for item in self.folder.glob("*.png"):
            with contextlib.suppress(FileNotFoundError):  # another worker evicted it
                info = item.stat()
                entries.append((info.st_mtime_ns, info.st_size, item))
        total = sum(size for _, size, _ in entries)
        for _, size, item in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes:
                break
            item.unlink(missing_ok=True)
            total -= size


def render_page(data: bytes, page: int, source: str) -> bytes:
    """Page ``page`` (1-based) of the PDF ``data`` as PNG, at most MAX_WIDTH_PX wide.

    Raises:
        QueryError: the PDF cannot be read, or has no such page (both name ``source``).
    """
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise QueryError(f"{source} is not a readable PDF: re-ingest a good copy") from exc
        try:
            if not 1 <= page <= len(pdf):
                raise QueryError(f"{source} has no page {page} (its pages: 1-{len(pdf)})")
            pixels = _pixels(pdf[page - 1])
        except pdfium.PdfiumError as exc:
            raise QueryError(f"page {page} of {source} could not be rendered") from exc
        finally:
            pdf.close()
    return encode_png(pixels)


def _pixels(handle: Any) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """The page's RGB pixels, scaled to fit the bounds (closing the page)."""
    try:
        width, height = handle.get_size()  # PDF points, 1/72 inch
        scale = min(MAX_SCALE, MAX_WIDTH_PX / max(width, 1), MAX_HEIGHT_PX / max(height, 1))
        bitmap = handle.render(scale=scale, rev_byteorder=True)  # RGB, not PDFium's BGR
        try:
            return np.array(bitmap.to_numpy(), dtype=np.uint8)  # a copy: the bitmap is freed
        finally:
            bitmap.close()
    finally:
        handle.close()


def encode_png(pixels: np.ndarray[Any, np.dtype[np.uint8]]) -> bytes:
    """An 8-bit RGB (height × width × 3) or grey (height × width) image as PNG bytes."""
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width, channels = pixels.shape
    color = {1: 0, 3: 2}[channels]  # PNG colour types: 0 grey, 2 truecolour
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # filter byte 0: None
    rows[:, 1:] = pixels.reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return b"".join(
        (
            _PNG_SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)),
            _chunk(b"IEND", b""),
        )
    )


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body)
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)
