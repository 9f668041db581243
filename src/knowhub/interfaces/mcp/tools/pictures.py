"""Pictures in MCP results: a search hit that describes a picture brings the picture as
image content, and a document's summary lists its pictures.

Image content costs a client's context far more than text, so a result carries at most
``MAX_IMAGES`` pictures, each scaled down to ``MAX_SIDE`` pixels and ``MAX_BYTES`` (the
sizes vision models take without scaling them down again).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_types import ImageContent
from pydantic import BaseModel, Field

from knowhub.models import DocumentRecord
from knowhub.providers.images import image_store, listed_images

__all__ = [
    "MAX_IMAGES",
    "ImageOut",
    "document_images",
    "image_contents",
    "images_count",
    "images_line",
]

log = logging.getLogger(__name__)

MAX_IMAGES = 3
MAX_SIDE = 1024
MAX_BYTES = 512 * 1024
# A summary lists at most this many pictures (with the count of all), descriptions cut.
MAX_LISTED = 20
MAX_DESCRIPTION = 300


class ImageOut(BaseModel):
    sha256: str = Field(description="The picture's content hash.")
    mime: str
    width: int
    height: int
    page: int | None = Field(description="The page or slide it is on.")
    description: str = Field(description="A vision model's caption, its OCR text or alt text.")
    described_by: str = Field(description="vision, ocr, alt, or empty (not described).")
    chunk_id: str | None = Field(description="The chunk describing it (get_content).")


def document_images(record: DocumentRecord) -> list[ImageOut]:
    """The first ``MAX_LISTED`` pictures ingest kept of ``record``'s document, each
    description cut to ``MAX_DESCRIPTION`` characters (OCR text or alt text may be long)."""
    listed = listed_images(record)[:MAX_LISTED]
    return [
        ImageOut.model_validate(
            {**entry, "description": str(entry.get("description", ""))[:MAX_DESCRIPTION]}
        )
        for entry in listed
    ]


def images_count(record: DocumentRecord) -> int:
    """How many pictures ingest kept of ``record``'s document."""
    return len(listed_images(record))


def images_line(images: Sequence[ImageOut], total: int) -> str:
    """The summary's Markdown line of a document's pictures ("" for none)."""
    if not images:
        return ""
    shown = [
        f"{'p. ' + str(i.page) + ': ' if i.page else ''}{i.description[:80] or '(no description)'}"
        for i in images[:10]
    ]
    more = f"; {total - 10} more" if total > 10 else ""
    return f"\n\n{total} pictures: " + "; ".join(shown) + more


def image_contents(shas: Sequence[str], data_dir: Path) -> list[ImageContent]:
    """The pictures named (each once, the first ``MAX_IMAGES``) as image content; a picture
    the image folder lost, or that cannot be read or decoded, is left out (never an error:
    the hits' text is the answer)."""
    store = image_store(data_dir)
    out: list[ImageContent] = []
    for sha in dict.fromkeys(shas):
        if len(out) >= MAX_IMAGES:
            break
        try:
            found = store.bounded(sha, MAX_BYTES, MAX_SIDE)
        except OSError as exc:  # unreadable image folder: the result goes out without it
            log.warning("picture %s not sent: %s", sha, exc)
            continue
        if found is not None:
            data, mime = found
            out.append(_content(data, mime))
    return out


def _content(data: bytes, mime: str) -> ImageContent:
    encoded = base64.b64encode(data).decode("ascii")
    fields: dict[str, Any] = {"type": "image", "data": encoded, "mime_type": mime}
    return ImageContent(**fields)
