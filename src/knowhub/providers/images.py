"""Images found inside documents, kept under the data dir by content hash.

``DATA_DIR/images/ab/<sha256>.<ext>``: the same picture in many documents (a logo on every
slide, one figure in two versions of a report) is one file, and a file's name says what it
holds, so a write is idempotent and a file is never rewritten. Files are written to a
temporary name and renamed into place: a kill leaves a whole file or none, never half of
one (a stray ``.tmp`` is ignored, and replaced by the next write of that picture).

The image's description (a vision model's caption) is kept beside it, one small file per
model and prompt (``<sha256>.<key>.txt``), so each picture is described once whatever
re-ingests, collections or versions follow. Like the vectors' cache, these files are derived:
deleting the folder costs re-describing, never correctness of the index (an image a document
lists but the folder lost is reported missing where it is asked for).
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knowhub.models import DocumentRecord
from knowhub.providers.files import write_atomically

__all__ = ["IMAGE_MIMES", "ImageStore", "image_store", "listed_images"]

IMAGES_DIR = "images"
# What MCP image content and the chat APIs take; ingest converts anything else to PNG.
IMAGE_MIMES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
_SHA = re.compile(r"[0-9a-f]{64}")
_KEY = re.compile(r"[0-9a-z_-]{1,64}")
_SMALLEST_SIDE = 128  # a picture that fits only smaller than this is not sent at all


class ImageStore:
    """The content-addressed image folder of one data dir."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes, ext: str) -> str:
        """Keep ``data`` (an ``ext`` picture: a key of :data:`IMAGE_MIMES`); its sha256."""
        if ext not in IMAGE_MIMES:
            raise ValueError(f"image type {ext!r} is not one of {', '.join(IMAGE_MIMES)}")
        sha = hashlib.sha256(data).hexdigest()
        path = self._path(sha, ext)
        if not path.exists():
            write_atomically(path, data)
        return sha

    def get(self, sha: str) -> tuple[bytes, str] | None:
        """The picture and its MIME type; None when ``sha`` is not a hash or not kept here."""
        found = self.find(sha)
        if found is None:
            return None
        return found.read_bytes(), IMAGE_MIMES[found.suffix[1:]]

    def find(self, sha: str) -> Path | None:
        """The file holding picture ``sha``, or None."""
        if not _SHA.fullmatch(sha):
            return None
        for ext in IMAGE_MIMES:
            path = self._path(sha, ext)
            if path.is_file():
                return path
        return None

    def bounded(self, sha: str, max_bytes: int, max_side: int) -> tuple[bytes, str] | None:
        """Picture ``sha`` as a client is sent it: as kept when it fits ``max_bytes`` and
        ``max_side``, else scaled down (JPEG for photos, PNG otherwise) until it does; None
        when it is not kept here, cannot be decoded, or cannot be made to fit."""
        kept = self.get(sha)
        if kept is None:
            return None
        data, mime = kept
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as picture:
                if len(data) <= max_bytes and max(picture.size) <= max_side:
                    return data, mime
                side = max_side
                while side >= _SMALLEST_SIDE:
                    smaller = _scaled(picture, side)
                    if len(smaller[0]) <= max_bytes:
                        return smaller
                    side //= 2
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError):
            return None  # damaged since it was kept (or planted by a bundle): not sent
        return None

    def note(self, sha: str, key: str) -> str | None:
        """The text kept for picture ``sha`` under ``key`` (its caption by one model)."""
        path = self._note_path(sha, key)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def keep_note(self, sha: str, key: str, text: str) -> None:
        """Keep ``text`` for picture ``sha`` under ``key``, replacing any earlier one."""
        write_atomically(self._note_path(sha, key), text.encode("utf-8"))

    def _path(self, sha: str, ext: str) -> Path:
        return self.root / sha[:2] / f"{sha}.{ext}"

    def _note_path(self, sha: str, key: str) -> Path:
        if not _SHA.fullmatch(sha) or not _KEY.fullmatch(key):
            raise ValueError(f"bad image note name {sha!r}/{key!r}")
        return self.root / sha[:2] / f"{sha}.{key}.txt"


def image_store(data_dir: Path) -> ImageStore:
    """The image folder of ``data_dir``."""
    return ImageStore(Path(data_dir) / IMAGES_DIR)


def _scaled(picture: Any, side: int) -> tuple[bytes, str]:
    from PIL import Image

    copy = picture.copy()
    copy.thumbnail((side, side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if picture.format == "JPEG" or copy.mode == "CMYK":
        copy.convert("RGB").save(out, "JPEG", quality=80)
        return out.getvalue(), IMAGE_MIMES["jpeg"]
    if copy.mode not in ("1", "L", "LA", "P", "RGB", "RGBA"):
        copy = copy.convert("RGBA")
    copy.save(out, "PNG")
    return out.getvalue(), IMAGE_MIMES["png"]


def listed_images(record: DocumentRecord) -> list[dict[str, Any]]:
    """The pictures ``record`` lists (:func:`knowhub.ingest.pictures.image_entries`), as stored."""
    own = record.metadata.get("knowhub")
    listed = own.get("images") if isinstance(own, Mapping) else None
    if not isinstance(listed, list):
        return []
    return [e for e in listed if isinstance(e, dict) and isinstance(e.get("sha256"), str)]
