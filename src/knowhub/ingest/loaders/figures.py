"""Pictures inside documents: kept by content hash, described, placed in the text.

A loader hands each picture it meets to :meth:`Figures.add` and writes the block it gets
back (``[Image: <description>]``, or nothing) where the picture sits, as a paragraph of its
own; :meth:`Figures.images` then finds each block in the finished text. The description is,
best first, a vision model's caption (``ingest.images.vision_model``, cached by picture),
the text OCR reads in it (a chart's labels, a screenshot), or the document's alternative
text for it. A picture too small to mean anything (an icon, a bullet, a rule) is passed
over, as is the same picture again in one document (a logo on every slide), and the
pictures past ``max_per_document``.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowhub.ingest.loaders.ocr import Ocr, OcrError
from knowhub.ingest.loaders.pixels import page_image
from knowhub.models import DocumentImage
from knowhub.providers.images import IMAGE_MIMES, ImageStore

__all__ = ["CaptionError", "Captioner", "Figures", "ImageOptions", "page_pictures"]

log = logging.getLogger(__name__)

Captioner = Callable[[str, bytes, str], str]
"""``caption(sha256, data, mime)``: a vision model's description of the picture."""

# Kept as they come when no side is longer (what the chat APIs and MCP clients take); a
# larger picture, or another format (BMP, TIFF …), is kept as PNG or JPEG at this size.
_KEEP_SIDE = 2048
_JPEG_QUALITY = 85
# The most pixels of one PDF page's pictures decoded at once (~200 MB as RGBA): they are
# decoded under PDFium's lock, all of a page before any is kept.
_PAGE_PIXELS = 50_000_000
# OCR of a photo reads noise: a reading is kept only with this many word characters, most
# of what it read.
_OCR_MIN_WORD_CHARS = 12
_OCR_MIN_WORD_SHARE = 0.6
_WORD_CHAR = re.compile(r"\w")
# Pillow's errors for a picture it cannot decode (a Windows metafile, a damaged stream).
_UNREADABLE = (OSError, ValueError, SyntaxError, TypeError, KeyError, IndexError, EOFError)


class CaptionError(RuntimeError):
    """The vision model could not describe a picture; the message says why."""


@dataclass(frozen=True)
class ImageOptions:
    """The ``ingest.images`` settings, with the store and the captioner they set up.

    Attributes:
        store: where pictures are kept; None: pictures are not extracted at all.
        min_side: a picture narrower or lower than this many pixels is passed over.
        max_per_document: the most pictures kept of one document.
        caption: the vision model's captioner; None: OCR or alternative text describe.
    """

    store: ImageStore | None = None
    min_side: int = 64
    max_per_document: int = 100
    caption: Captioner | None = None


@dataclass
class _Found:
    image: DocumentImage
    block: str


@dataclass
class Figures:
    """The pictures of one document as its loader meets them."""

    path: Path
    options: ImageOptions
    ocr: Ocr
    found: list[_Found] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _over: int = 0  # pictures past max_per_document
    raw_seen: set[str] = field(default_factory=set)  # a PDF's image streams met (hashes)

    def add(self, data: bytes | Any, page: int | None = None, alt: str = "") -> str:
        """Keep and describe a picture (its file bytes, or a Pillow image); the block to put
        in the text where it sits ("" for none: passed over, or nothing to say of it)."""
        store = self.options.store
        if store is None:
            return ""
        if len(self.found) >= self.options.max_per_document:
            self._over += 1
            return ""
        kept = self._keep(store, data)
        if kept is None:
            return ""
        sha, mime, stored, picture = kept
        width, height = picture.size
        try:
            description, by = self._describe(sha, stored, mime, picture, alt)
        finally:
            picture.close()
        # One line, whatever gave it: a caption's "### Labels" or an OCR'd "# comment" would
        # otherwise be a heading, cutting the block (and the document's sections) in two.
        text = " ".join(description.split())
        block = f"[Image: {text}]" if text else ""
        image = DocumentImage(sha, mime, width, height, page, text, by if block else "")
        self.found.append(_Found(image, block))
        return block

    def images(self, text: str) -> tuple[DocumentImage, ...]:
        """The pictures with where each block landed in the document's ``text``, in order
        (a block the character limit cut off has none)."""
        placed: list[DocumentImage] = []
        cursor = 0
        for found in self.found:
            at = text.find(found.block, cursor) if found.block else -1
            if at < 0:
                placed.append(found.image)
                continue
            cursor = at + len(found.block)
            placed.append(_placed(found.image, at, cursor))
        return tuple(placed)

    def notes(self) -> tuple[str, ...]:
        """Warnings for the document: captions that failed, pictures left out."""
        out = list(self.warnings)
        if self._over:
            out.append(
                f"{self.path}: {self._over} more pictures not kept, over "
                f"ingest.images.max_per_document ({self.options.max_per_document})"
            )
        return tuple(out)

    def _keep(self, store: ImageStore, data: bytes | Any) -> tuple[str, str, bytes, Any] | None:
        """Store the picture: its hash, MIME type, kept bytes and an open Pillow image of
        them; None when it is passed over (unreadable, too small, too large, seen already)."""
        picture = _open(data)
        if picture is None:
            return None
        width, height = picture.size
        small = min(width, height) < self.options.min_side
        if small or width * height > self.ocr.options.max_pixels:
            picture.close()
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                picture.load()  # a truncated picture must fail here, not where it is shown
            stored, ext = _stored(picture, data if isinstance(data, bytes) else None)
        except _UNREADABLE as exc:
            log.debug("%s: a picture not kept: %s", self.path, exc)
            picture.close()
            return None
        sha = store.put(stored, ext)
        if sha in self._seen:
            picture.close()
            return None
        self._seen.add(sha)
        if stored is not data:  # what is kept is what is described and shown
            picture.close()
            picture = _open(stored)
        return sha, IMAGE_MIMES[ext], stored, picture

    def _describe(
        self, sha: str, stored: bytes, mime: str, picture: Any, alt: str
    ) -> tuple[str, str]:
        """The picture's description and what gave it: ``vision``, ``ocr`` or ``alt``.

        Raises:
            LoaderError: the file's time (``ingest.max_seconds_per_file``) is up.
        """
        self.ocr.deadline.check(self.path, "while describing its pictures")
        if self.options.caption is not None:
            try:
                return self.options.caption(sha, stored, mime), "vision"
            except CaptionError as exc:
                if not self.warnings:  # one line a document: the model is down for all
                    self.warnings.append(f"{self.path}: pictures not captioned: {exc}")
        read = self._read(picture)
        if read:
            return read, "ocr"
        return alt, "alt"

    def _read(self, picture: Any) -> str:
        """The text OCR finds in the picture, when it found words, not noise."""
        if not self.ocr.options.enabled or self.ocr.problem is not None:
            return ""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                text = self.ocr.read(page_image(picture))
        except (OcrError, *_UNREADABLE) as exc:
            # Out of time, every picture left would fail the same way, each paying for
            # Tesseract's layout analysis first: the file fails instead.
            self.ocr.deadline.check(self.path, "while reading its pictures")
            log.debug("%s: OCR of a picture failed: %s", self.path, exc)
            return ""
        words = len(_WORD_CHAR.findall(text))
        visible = len(text) - sum(map(str.isspace, text))
        if words < _OCR_MIN_WORD_CHARS or words < _OCR_MIN_WORD_SHARE * visible:
            return ""
        return text


def _placed(image: DocumentImage, start: int, end: int) -> DocumentImage:
    return DocumentImage(
        image.sha256,
        image.mime,
        image.width,
        image.height,
        image.page,
        image.description,
        image.described_by,
        start,
        end,
    )


def _open(data: bytes | Any) -> Any:
    """A Pillow image of ``data`` (opened lazily: only its header is read), or None."""
    if not isinstance(data, bytes):
        return data
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, Image.DecompressionBombError, *_UNREADABLE):
        return None


def _stored(picture: Any, raw: bytes | None) -> tuple[bytes, str]:
    """The bytes to keep and their type: the file as it came when it is a format the chat
    APIs take and not too large, else PNG (drawings, transparency) or JPEG (photos)."""
    ext = "jpeg" if picture.format == "JPEG" else str(picture.format or "").lower()
    if raw is not None and ext in IMAGE_MIMES and max(picture.size) <= _KEEP_SIDE:
        return raw, ext
    from PIL import Image, ImageOps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copy = ImageOps.exif_transpose(picture)
        copy.thumbnail((_KEEP_SIDE, _KEEP_SIDE), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if copy.mode in ("RGB", "CMYK", "YCbCr") and picture.format == "JPEG":
        copy.convert("RGB").save(out, "JPEG", quality=_JPEG_QUALITY)
        return out.getvalue(), "jpeg"
    if copy.mode not in ("1", "L", "LA", "P", "RGB", "RGBA"):
        copy = copy.convert("RGBA" if "A" in copy.mode else "RGB")
    copy.save(out, "PNG", optimize=False)
    return out.getvalue(), "png"


def page_pictures(page: Any, figures: Figures) -> list[Any]:
    """The pictures of a PDF page (a PDFium page, under the caller's PDFium lock) as Pillow
    images. Left undecoded: those too small or too large to keep, an image stream met
    before in the document (a letterhead on every page: decoding it again cost 0.27 s a
    page), and those past what the document may keep or one page may decode
    (``_PAGE_PIXELS``)."""
    options = figures.options
    room = options.max_per_document - len(figures.found) if options.store is not None else 0
    import pypdfium2 as pdfium

    pictures: list[Any] = []
    pixels = 0
    for obj in page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        if len(pictures) >= room:
            break
        width, height = obj.get_px_size()
        area = width * height
        if min(width, height) < options.min_side or area > figures.ocr.options.max_pixels:
            continue
        if pixels + area > _PAGE_PIXELS or not _first_time(obj, figures.raw_seen):
            continue
        try:
            bitmap = obj.get_bitmap(render=False)
        except pdfium.PdfiumError:  # a stream PDFium cannot decode: the page's text stays
            continue
        pictures.append(bitmap.to_pil().copy())  # the copy outlives PDFium's buffer
        # Not close(): pypdfium2 warns on closing a bitmap PDFium allocated; dropping the
        # last reference frees it now, still under the caller's lock.
        del bitmap
        pixels += area
    return pictures


def _first_time(obj: Any, seen: set[str]) -> bool:
    """Whether this image object's stream (its raw, still encoded bytes) is new to the
    document; remembered as seen."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    size = pdfium_c.FPDFImageObj_GetImageDataRaw(obj.raw, None, 0)
    if size <= 0:
        return True
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDFImageObj_GetImageDataRaw(obj.raw, buffer, size)
    digest = hashlib.sha256(buffer.raw).hexdigest()
    if digest in seen:
        return False
    seen.add(digest)
    return True
