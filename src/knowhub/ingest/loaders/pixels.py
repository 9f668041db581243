"""A Pillow picture as the OCR engine reads it (an image file's page, a figure in a document)."""

from __future__ import annotations

from typing import Any

from knowhub.ingest.loaders.ocr import PageImage, looks_clean

__all__ = ["page_image"]

# A resolution a file claims outside this range is a placeholder (0, 1, 72 from an editor
# that never knew it): Tesseract is then told this one.
_DPI_RANGE = (100, 1200)
_DEFAULT_DPI = 300
# Screen text is small: a clean picture up to this size is read at twice its size, which
# took generated 12-14 px screenshots from 17-100 % of characters wrong to 0-18 % (a scan is
# not: its noise grows with it, 0 to 6.5 %; docs/decisions.md).
_UPSCALE_MAX_PIXELS = 4_000_000


def page_image(frame: Any) -> PageImage:
    """The picture as OCR reads it: upright 8-bit grey, a small clean one at twice its size."""
    from PIL import Image

    grey, dpi = _grey(frame), _dpi(frame)
    page = PageImage(grey.tobytes(), grey.width, grey.height, grey.width, dpi)
    if grey.width * grey.height > _UPSCALE_MAX_PIXELS or not looks_clean(page):
        return page
    grey = grey.resize((grey.width * 2, grey.height * 2), Image.Resampling.LANCZOS)
    return PageImage(grey.tobytes(), grey.width, grey.height, grey.width, dpi)


def _grey(frame: Any) -> Any:
    """The frame upright (as its EXIF says) in 8-bit grey, transparency on white paper."""
    from PIL import Image, ImageOps

    frame = ImageOps.exif_transpose(frame)
    if frame.mode == "I" or frame.mode.startswith("I;16"):
        # 16-bit grey: convert("L") clips at 255 where it should scale, so a scan's ink
        # (anything above 255 of 65535) would all turn white.
        import numpy as np

        values = np.asarray(frame).astype(np.uint32) >> 8
        frame = Image.fromarray(values.clip(0, 255).astype(np.uint8), "L")
    if frame.mode in ("RGBA", "LA", "PA") or "transparency" in frame.info:
        # Dropping alpha would turn a transparent background black, under black text.
        rgba = frame.convert("RGBA")
        paper = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        frame = Image.alpha_composite(paper, rgba)
    return frame.convert("L")


def _dpi(frame: Any) -> int:
    dpi = frame.info.get("dpi")
    try:
        value = round(float(dpi[0]))
    except (TypeError, ValueError, IndexError):
        return _DEFAULT_DPI
    low, high = _DPI_RANGE
    return value if low <= value <= high else _DEFAULT_DPI
