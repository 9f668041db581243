"""Where a cited chunk sits on its PDF page: the boxes to draw over the page's image.

The chunk's text came from this page's text layer (``pypdfium2``'s, see the PDF loader), so
each of its lines is found again there by PDFium's own text search, in order, and PDFium
gives the rectangles its characters cover. A line the search does not find (a hyphenation
the loader joined, a line from the next page) is simply not marked: the extracted text beside
the image has the exact span. Boxes are in percent of the page, so they scale with the image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from knowhub.ingest.loaders.pdf import PDFIUM_LOCK

__all__ = ["MAX_BOXES", "Box", "cited_boxes"]

MAX_BOXES = 400  # a chunk is a few hundred tokens: more would be a page of single glyphs
_MIN_LINE = 3  # shorter lines ("1", "–") match anywhere: they would mark the wrong place
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Box:
    """A rectangle of the page, in percent of its width and height from the top left."""

    left: float
    top: float
    width: float
    height: float


def cited_boxes(data: bytes, page: int, text: str) -> list[Box]:
    """The boxes that ``text``'s lines cover on page ``page`` (1-based) of the PDF ``data``;
    none when the PDF, the page or the text cannot be matched (the image is still shown)."""
    import pypdfium2 as pdfium

    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if len(line) >= _MIN_LINE]
    if not lines:
        return []
    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            return []
        try:
            if not 1 <= page <= len(pdf):
                return []
            return _on_page(pdf[page - 1], lines)
        except pdfium.PdfiumError:
            return []
        finally:
            pdf.close()


def _on_page(handle: Any, lines: list[str]) -> list[Box]:
    try:
        if handle.get_rotation() % 360:  # the rectangles are of the unrotated page
            return []
        # What is rendered (the crop box within the media box), in user space, where
        # PDFium's rectangles are too: a page need not start at (0, 0).
        x0, y0, x1, y1 = handle.get_bbox()
        textpage = handle.get_textpage()
        try:
            rects = _rects(textpage, lines)
        finally:
            textpage.close()
    finally:
        handle.close()
    width, height = x1 - x0, y1 - y0
    if width <= 0 or height <= 0:
        return []
    boxes = []
    for left, bottom, right, top in rects:
        left, right = max(left, x0), min(right, x1)  # only what is on the rendered page
        bottom, top = max(bottom, y0), min(top, y1)
        if right > left and top > bottom:
            boxes.append(
                Box(
                    round(100 * (left - x0) / width, 3),
                    round(100 * (y1 - top) / height, 3),
                    round(100 * (right - left) / width, 3),
                    round(100 * (top - bottom) / height, 3),
                )
            )
    return boxes


def _rects(textpage: Any, lines: list[str]) -> list[tuple[float, float, float, float]]:
    """Each line searched from where the previous one ended (so a repeated line is marked
    at its place in the chunk), the rectangles of what was found."""
    found: list[tuple[float, float, float, float]] = []
    at = 0
    for line in lines:
        searcher = textpage.search(line, index=at)
        try:
            match = searcher.get_next()
        finally:
            searcher.close()
        if match is None:
            continue
        start, count = match
        at = start + count
        for n in range(textpage.count_rects(start, count)):
            found.append(textpage.get_rect(n))
            if len(found) >= MAX_BOXES:
                return found
    return found
