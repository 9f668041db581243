"""The ``id`` of a JSON-RPC frame, to answer it with: read from a frame that is not JSON as
a whole (cut short, or over the size limit) as far as it can be.

Light (``json`` only): the stdio wire (early.py) imports it before the MCP SDK is loaded.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["ID_SEARCH_CHARS", "echoable", "recovered_id", "sdk_id"]

# How far into a frame its id is looked for: a client writes it near the start, and a frame
# whose first 64 KiB hold no id is answered with id null rather than read on.
ID_SEARCH_CHARS = 65_536


def sdk_id(value: object) -> bool:
    """An id the SDK takes: an integer or a string."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def echoable(value: object) -> bool:
    """An id an answer can carry back: the SDK's, or a finite number."""
    return sdk_id(value) or (isinstance(value, float) and math.isfinite(value))


def recovered_id(text: str) -> Any:
    """The top-level id of a frame that is not JSON as a whole, when it comes before the
    break (and within :data:`ID_SEARCH_CHARS`): each key and value is read in turn until the
    id, or until one cannot be. None when there is none to be read."""
    text = text[:ID_SEARCH_CHARS]
    decoder = json.JSONDecoder()
    at = _skip(text, 0)
    if not text.startswith("{", at):
        return None
    at += 1
    while True:
        try:
            key, at = decoder.raw_decode(text, _skip(text, at))
            at = _skip(text, at)
            if not text.startswith(":", at):
                return None
            value, at = decoder.raw_decode(text, _skip(text, at + 1))
        except (ValueError, RecursionError):
            return None
        at = _skip(text, at)
        # Only a value something follows is whole: "12" at the break may be cut from "123".
        if not text.startswith((",", "}"), at):
            return None
        if key == "id":
            return value if echoable(value) else None
        at += 1


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
