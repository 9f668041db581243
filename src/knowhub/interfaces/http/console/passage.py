"""The passage around a cited chunk, as one continuous text with the cited span marked.

Neighbouring chunks overlap (``chunking.overlap``) and the gaps between them are the
whitespace the chunker trimmed, so showing them one after another would repeat text. Every
chunk's span points into the same extracted text (``chunk.text ==
doc.text[char_start:char_end]``), so the passage is stitched from the spans instead: each
chunk contributes only what lies past the text already shown, and the cited chunk's span is
cut out of that text exactly, wherever it falls (part of it may be a neighbour's overlap).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from knowhub.models import Hit

__all__ = ["Block", "Piece", "passage"]


@dataclass(frozen=True)
class Piece:
    """A run of text, ``marked`` when it lies inside the cited span."""

    text: str
    marked: bool


@dataclass(frozen=True)
class Block:
    """What one chunk adds to the passage.

    Attributes:
        hit: the chunk.
        pieces: its new text (past what earlier chunks showed), split at the cited span.
        heading: its section path when it differs from the block before (else empty).
        page: its page when it differs from the block before (else None).
        gap: text the chunker left out (whitespace) lies between it and the block before.
    """

    hit: Hit
    pieces: tuple[Piece, ...]
    heading: str
    page: int | None
    gap: bool

    @property
    def cited(self) -> bool:
        return any(p.marked for p in self.pieces)


def passage(chunks: Sequence[Hit], cited: Hit, around: int) -> list[Block]:
    """The cited chunk and up to ``around`` chunks either side of it, stitched.

    Args:
        chunks: every chunk of the document (any order; sorted by span here).
        cited: the chunk the citation points to (one of ``chunks``, matched by id).
        around: how many neighbours to show before and after it.
    """
    ordered = sorted(chunks, key=lambda h: (h.char_start, h.char_end))
    at = next((i for i, h in enumerate(ordered) if h.chunk_id == cited.chunk_id), None)
    if at is None:  # the document was re-ingested between the two lookups: show the chunk
        ordered, at = [cited], 0
    window = ordered[max(0, at - around) : at + around + 1]
    blocks: list[Block] = []
    shown_to = window[0].char_start
    before: Hit | None = None
    for hit in window:
        start = max(hit.char_start, shown_to)
        new = hit.text[start - hit.char_start :]
        blocks.append(
            Block(
                hit=hit,
                pieces=_split(new, start, cited.char_start, cited.char_end),
                heading=hit.section_path if _changed(before, hit, "section_path") else "",
                page=hit.page if _changed(before, hit, "page") else None,
                gap=before is not None and hit.char_start > shown_to,
            )
        )
        shown_to, before = max(shown_to, hit.char_end), hit
    return blocks


def _changed(before: Hit | None, hit: Hit, field: str) -> bool:
    return before is None or getattr(before, field) != getattr(hit, field)


def _split(text: str, offset: int, mark_start: int, mark_end: int) -> tuple[Piece, ...]:
    """``text`` (starting at ``offset`` in the document) cut at ``[mark_start, mark_end)``."""
    cuts = sorted(
        {0, len(text), *(min(max(c - offset, 0), len(text)) for c in (mark_start, mark_end))}
    )
    pieces = []
    for lo, hi in itertools.pairwise(cuts):
        if hi > lo:
            marked = mark_start <= offset + lo and offset + hi <= mark_end
            pieces.append(Piece(text[lo:hi], marked))
    return tuple(pieces)
