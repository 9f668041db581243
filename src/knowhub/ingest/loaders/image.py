"""Image files (PNG, JPEG, TIFF, WebP, BMP) read by OCR: a multi-page TIFF page by page.

Pillow reads the header first, so a picture too large to read is refused before its pixels
are decoded; frames are decoded one at a time, so a long TIFF never sits in memory whole.
"""

from __future__ import annotations

import io
import re
import struct
import warnings
from pathlib import Path
from typing import Any

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.budget import too_many_scans
from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    PageProgress,
    first_line_title,
    loader_error,
    ocr_unavailable,
    pick_title,
)
from knowhub.ingest.loaders.ocr import Ocr, OcrError
from knowhub.ingest.loaders.pixels import page_image
from knowhub.models import LoadedDocument

__all__ = ["IMAGE_EXTENSIONS", "load_image"]

IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")
# What those extensions may hold (a camera's MPO, JPEG with a preview inside, opens as JPEG).
_FORMATS = ("BMP", "JPEG", "PNG", "TIFF", "WEBP")
_PAGE_SEPARATOR = "\n\n"
# What Pillow raises on a corrupt or truncated file, past Image.open (which turns these into
# UnidentifiedImageError): a TIFF's frames are parsed only when reached.
_CORRUPT = (
    OSError,
    ValueError,
    SyntaxError,
    TypeError,
    KeyError,
    IndexError,
    EOFError,
    struct.error,
)


def load_image(
    path: Path, data: bytes, limits: Limits, on_page: PageProgress | None = None
) -> LoadedDocument:
    """Read an image's text by OCR; each page of a multi-page TIFF is a page.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the text; ``ocr`` says whether and how it is read, and
            ``ocr.max_pixels`` how large a picture may be.
        on_page: told of each page read, as ``(page, pages)``.

    Raises:
        OcrUnavailableError: OCR is off, or unavailable (no tesserocr, no language data), or
            found no text in it.
        LoaderError: the file is no readable image, or too large.
    """
    ocr = Ocr(limits.ocr, limits.deadline)
    if not limits.ocr.enabled:
        raise ocr_unavailable(path, "is an image and OCR is off; enable ingest.ocr to read it")
    if ocr.problem is not None:
        raise ocr_unavailable(path, f"is an image, not read: {ocr.problem}")
    pages = _read_pages(path, data, ocr, CharBudget(path, limits), on_page)
    if not any(pages):
        # A diagram or a photo: nothing to index, skipped in a folder as a scan OCR cannot
        # read (a folder of pictures must not fail a run); failed when named.
        raise ocr_unavailable(path, "is an image in which OCR found no text")
    text = _PAGE_SEPARATOR.join(pages)
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(_PAGE_SEPARATOR)
    note = ocr.note
    return LoadedDocument(
        text=text,
        title=pick_title(path, first_line_title(text)),
        format="image",
        # One picture has no pages to cite; a TIFF of several has.
        page_starts=tuple(starts) if len(pages) > 1 else (),
        metadata={"pages": len(pages), "ocr_pages": len(pages)},
        line_map=None,  # no lines a reader could go to
        warnings=(f"{path}: {note}",) if note else (),
    )


def _read_pages(
    path: Path, data: bytes, ocr: Ocr, budget: CharBudget, on_page: PageProgress | None
) -> list[str]:
    from PIL import Image, ImageSequence

    image = _open(path, data, ocr.options.max_pixels)
    try:
        # Pillow's warnings (DecompressionBombWarning: ingest.ocr_max_megapixels is the limit
        # here, checked per frame; "Tag data larger than file" of a damaged TIFF) are no news:
        # the file is read, or fails with its reason.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Only a TIFF's frames are pages; an animated WebP's are moments of one picture.
            count = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
            if 0 < ocr.options.max_pages < count:  # known before any frame is decoded
                raise too_many_scans(path, f"{count} pages", ocr.options.max_pages)
            pages = []
            for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
                where = f"at page {number} of {count}"
                ocr.deadline.check(path, where)
                text = _read_frame(path, frame, number, count, ocr)
                ocr.deadline.check(path, where)  # its OCR ended at the deadline: say so
                pages.append(budget.spend(text))
                if on_page is not None:
                    on_page(number, count)
                if number >= count:
                    break
            return pages
    except _CORRUPT as exc:  # truncated, corrupt: what Image.open itself turns into errors
        raise _unreadable(path, exc) from exc
    except Image.DecompressionBombError as exc:
        raise _too_large(path, str(exc), ocr.options.max_pixels) from exc
    finally:
        image.close()


def _open(path: Path, data: bytes, max_pixels: int) -> Any:
    # The plugins register the formats of _FORMATS (Image.open knows only a few until then).
    from PIL import (  # noqa: F401
        BmpImagePlugin,
        Image,
        JpegImagePlugin,
        PngImagePlugin,
        TiffImagePlugin,
        UnidentifiedImageError,
        WebPImagePlugin,
    )

    try:
        with warnings.catch_warnings():  # as in _read_pages
            warnings.simplefilter("ignore")
            return Image.open(io.BytesIO(data), formats=_FORMATS)
    except Image.DecompressionBombError as exc:  # over Pillow's own limit: not corrupt
        raise _too_many_pixels(path, exc, max_pixels) from exc
    except (UnidentifiedImageError, *_CORRUPT) as exc:
        raise _unreadable(path, exc) from exc


def _too_many_pixels(path: Path, exc: Exception, limit: int) -> LoaderError:
    """A picture past Pillow's limit (179 megapixels, as its header says), refused before
    its pixels are decoded: past any ``ingest.ocr_max_megapixels`` worth setting too."""
    claimed = re.search(r"\((\d+) pixels\)", str(exc))
    size = f"{int(claimed[1]) / 1e6:g} megapixels" if claimed else "too many pixels"
    return loader_error(
        path,
        f"is {size}, more than OCR reads of one picture (ingest.ocr_max_megapixels: "
        f"{limit / 1e6:g}): scale it down",
    )


def _read_frame(path: Path, frame: Any, number: int, count: int, ocr: Ocr) -> str:
    """One page's text; the page is checked against the pixel limit before it is decoded."""
    width, height = frame.size
    limit = ocr.options.max_pixels
    if width * height > limit:
        where = f"page {number} is" if count > 1 else "is"
        raise _too_large(path, f"{where} {width}x{height} pixels", limit)
    try:
        return ocr.read(page_image(frame))
    except OcrError as exc:
        ocr.deadline.check(path, f"at page {number} of {count}")  # the time ran out
        raise loader_error(path, f"page {number} was not read: {exc}") from exc


def _too_large(path: Path, what: str, limit: int) -> LoaderError:
    return loader_error(
        path,
        f"{what}, over ingest.ocr_max_megapixels ({limit / 1e6:g}): scale it down, or raise "
        "the limit",
    )


def _unreadable(path: Path, exc: BaseException) -> LoaderError:
    # Pillow's "cannot identify image file <_io.BytesIO object at 0x…>" names our buffer,
    # not the file: what it means is said instead.
    from PIL import UnidentifiedImageError

    unknown = isinstance(exc, UnidentifiedImageError)
    why = "its bytes are of no image format knowhub reads" if unknown else str(exc)
    return loader_error(
        path,
        f"is not a readable image ({why}): it may be corrupt, truncated or not the format "
        "its extension says; re-save it as PNG or JPEG",
    )
