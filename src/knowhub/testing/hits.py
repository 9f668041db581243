"""Search results built for a test, without a collection or a search.

A :class:`~knowhub.models.Hit` has fourteen required fields and most tests care about one
or two of them; :func:`hit` fills the rest with plain values so a test names only what it
checks, and a new field on ``Hit`` is added here once rather than in every test.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from knowhub.models import Hit

__all__ = ["hit"]


def hit(text: str = "", **fields: Any) -> Hit:
    """A hit holding ``text`` (its span the whole text), other fields overridden by
    ``fields``; any field of :class:`~knowhub.models.Hit` may be given, and an unknown
    name raises TypeError so a typo does not pass silently."""
    base = Hit(
        chunk_id="c_0_0",
        score=1.0,
        source="doc.md",
        title="",
        text=text,
        page=None,
        section_path="",
        line_start=1,
        line_end=1,
        char_start=0,
        char_end=len(text),
        doc_hash="0" * 64,
        collection="default",
        language="en",
    )
    return dataclasses.replace(base, **fields)
