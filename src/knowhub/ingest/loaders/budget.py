"""How long reading one file may take: ``ingest.max_seconds_per_file``.

A flag cannot interrupt a loader stuck inside a C call (Tesseract, PDFium), and a thread
cannot be stopped at all, so the time is checked where a loader can stop cleanly: between
pages, frames, and every few thousand elements of a parse, after the file is loaded, cleaned
and chunked; OCR is handed the time left (Tesseract stops its recognition there). One step
can overrun the budget by its own length (a page rendered by PDFium, bounded by
``ingest.ocr_max_megapixels``), never by the rest of the file.
"""

from __future__ import annotations

import time
from pathlib import Path

from knowhub.errors import LoaderError
from knowhub.surrogates import escape_surrogates

__all__ = ["Deadline", "over_time", "too_many_scans"]


class Deadline:
    """The moment reading one file must stop by (``seconds`` from now; 0: never)."""

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self._ends = time.monotonic() + seconds if seconds > 0 else None

    def passed(self) -> bool:
        return self._ends is not None and time.monotonic() >= self._ends

    def left_ms(self) -> int | None:
        """Milliseconds left (at least 1: 0 means "no limit" to Tesseract); None: no limit."""
        if self._ends is None:
            return None
        return max(1, int((self._ends - time.monotonic()) * 1000))

    def check(self, path: Path, where: str = "") -> None:
        """Raise :func:`over_time`'s error once the time is up; ``where`` says how far the
        reading got (``after page 466 of 1000``)."""
        if self.passed():
            raise over_time(path, self.seconds, where)


def over_time(path: Path, seconds: float, where: str = "") -> LoaderError:
    """The error for a file not read within ``ingest.max_seconds_per_file``."""
    stopped = f" (stopped {where})" if where else ""
    return LoaderError(
        f"{escape_surrogates(str(path))}: not read within ingest.max_seconds_per_file "
        f"({seconds:g} s){stopped}: split the file, or raise the limit (0: none)"
    )


def too_many_scans(path: Path, pages: str, limit: int, detail: str = "") -> LoaderError:
    """The error for a file with more pages to read by OCR than ``ingest.ocr_max_pages``;
    ``pages`` says how many (``3 pages``), ``detail`` which page went over."""
    detail = f" ({detail})" if detail else ""
    return LoaderError(
        f"{escape_surrogates(str(path))}: has {pages} to read by OCR{detail}, over "
        f"ingest.ocr_max_pages ({limit}): split it, or raise the limit (0: none)"
    )
