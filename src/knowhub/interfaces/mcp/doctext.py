"""A document's text rebuilt from its chunks, and finding a document by what an agent holds.

The store keeps chunks, not the files' extracted text. Every chunk's span points into that
text (``chunk.text == text[char_start:char_end]``), neighbours overlap
(``chunking.overlap``) and the gaps between them are whitespace the chunker trimmed. So the
text is stitched from the spans: each chunk adds only what lies past the text already
rebuilt, and a gap is filled with as many newlines as it was long, so that an offset in the
rebuilt text is the same character offset a hit's ``char_start`` and ``char_end`` give
(``read_document(offset=hit.char_start)`` reads on from a hit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowhub.collection import Collection
from knowhub.errors import QueryError
from knowhub.models import DocumentRecord, Hit

__all__ = ["Piece", "find_document", "of_chunk", "pieces", "stitched"]


@dataclass(frozen=True)
class Piece:
    """What one chunk adds to the rebuilt text: ``text`` from offset ``start`` on."""

    hit: Hit
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def pieces(chunks: Sequence[Hit]) -> list[Piece]:
    """Each chunk's new text (past what the chunks before it cover), in document order; a
    chunk wholly inside the ones before adds nothing and is left out."""
    ordered = sorted(chunks, key=lambda h: (h.char_start, h.char_end))
    out: list[Piece] = []
    shown_to = 0
    for hit in ordered:
        start = max(hit.char_start, shown_to)
        new = hit.text[start - hit.char_start :]
        if new:
            out.append(Piece(hit, new, start))
            shown_to = start + len(new)
    return out


def stitched(parts: Sequence[Piece], start: int = 0) -> str:
    """``parts`` joined from offset ``start``, each gap filled with newlines (see above)."""
    text: list[str] = []
    at = start
    for part in parts:
        if part.start > at:
            text.append("\n" * (part.start - at))
        text.append(part.text)
        at = part.end
    return "".join(text)


def find_document(handle: Collection, key: str) -> DocumentRecord:
    """The document of ``handle`` that ``key`` names: its path or source as stored, its id
    (a resource URI's), or its source hash (8+ leading characters, as search hits show).

    Raises:
        QueryError: none matches, or a hash matches several (copies of one file).
    """
    wanted = key.strip()
    records = handle.documents()
    for record in records:
        if wanted in (record.path, record.source, record.doc_id):
            return record
    hashed = [r for r in records if len(wanted) >= 8 and r.doc_hash.startswith(wanted.lower())]
    if len(hashed) == 1:
        return hashed[0]
    if hashed:
        sources = ", ".join(sorted(r.source for r in hashed)[:5])
        raise QueryError(
            f"document {key!r}: {len(hashed)} documents have that source_hash (copies of one "
            f"file: {sources}): give the path of the one to read"
        )
    raise QueryError(
        f"document {key!r}: no document with that source_hash (8+ characters), path or id "
        f"in collection {handle.name!r}: copy source_hash (or source) from a search hit"
    )


def of_chunk(handle: Collection, hit: Hit) -> DocumentRecord:
    """The document ``hit`` is a chunk of: copies of one file share a source hash, not an
    id (a chunk id starts with its document's)."""
    for record in handle.documents():
        if record.doc_hash == hit.doc_hash and hit.chunk_id.startswith(record.doc_id[:16]):
            return record
    return handle.document(hit.doc_hash)
