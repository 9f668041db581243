"""Pictures in chat requests, checked as the real servers check them.

OpenAI (and Azure, vLLM) take a user turn's content as an array of parts: ``{"type":
"text", "text"}`` and ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,
…"}}``; Ollama takes a turn's pictures as ``images``, an array of bare base64 strings. A
picture that is not valid base64, or not a PNG, JPEG, GIF or WebP that decodes, is refused
with the server's 400: a client that sends garbage fails here as it would there.
"""

from __future__ import annotations

import base64
import binascii
import io
import re

__all__ = ["ollama_images", "openai_parts"]

_DATA_URL = re.compile(r"data:(image/[a-z]+);base64,(.*)", re.DOTALL)
_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}
_UNSUPPORTED = (
    "You uploaded an unsupported image. Please make sure your image has of one the following "
    "formats: ['png', 'jpeg', 'gif', 'webp']."
)


def openai_parts(at: str, parts: object) -> str | None:
    """What OpenAI says of a user turn's content array, or None when it takes it."""
    if not isinstance(parts, list) or not parts:
        return f"Invalid '{at}': expected a string or a non-empty array of content parts."
    for i, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            continue
        if kind != "image_url":
            return f"Invalid value: '{kind}'. Supported values are: 'text' and 'image_url'."
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        if not isinstance(url, str):
            return f"Missing required parameter: '{at}[{i}].image_url.url'."
        found = _DATA_URL.fullmatch(url)
        if found is None:
            return "Invalid image URL: expected a data URL (the test server fetches nothing)."
        problem = _decodes(found[2], found[1])
        if problem is not None:
            return problem
    return None


def ollama_images(images: object) -> str | None:
    """What Ollama says of a turn's ``images``, or None when it takes them."""
    if images is None:
        return None
    if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
        return "json: cannot unmarshal value into Go struct field Message.messages.images"
    for image in images:
        problem = _decodes(image, None)
        if problem is not None:
            return problem
    return None


def _decodes(encoded: str, mime: str | None) -> str | None:
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return "illegal base64 data" if mime is None else "Invalid base64 image_url."
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as picture:
            picture.load()
            found = picture.format
    except (UnidentifiedImageError, OSError, ValueError):
        return _UNSUPPORTED if mime is not None else "image: unknown format"
    if found not in _FORMATS.values() or (mime is not None and _FORMATS.get(mime) != found):
        return _UNSUPPORTED
    return None
