"""A segment: an immutable block of chunk rows with everything a search reads of them.

Row ids, vectors, token counts, the lexical postings and the filter columns of a set of
chunks, by position. A collection's index is a few segments (one big one read from a
snapshot, small ones for what was written since) plus which positions still live.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from knowhub.providers.stores.derived.batching import ScanBatcher
from knowhub.providers.stores.derived.postings import (
    Ints,
    Postings,
    build_postings,
    fts5_folded,
)
from knowhub.providers.stores.indexed.index import filter_terms

__all__ = ["DIGEST_SQL", "Row", "Segment", "build_segment", "digest"]

Floats = np.ndarray[Any, np.dtype[np.float32]]

# A row's content digest: the code point of its chunk id's last character (a hex digit of
# the text's sha256), which the fingerprint of a collection weighs its row ids by
# (changes.fingerprint). One SQL function call a row: at 100k chunks the fingerprint takes
# ~0.1 s where two substr/instr pairs took ~0.2 s, and a fresh process pays it on open.
DIGEST_SQL = "unicode(substr(k.chunk_id, -1))"


def digest(chunk_id: str) -> int:
    """What ``DIGEST_SQL`` computes of ``chunk_id`` (its NULL for "" weighs 0 in a sum)."""
    return ord(chunk_id[-1]) if chunk_id else 0


@dataclass(frozen=True)
class Row:
    """What the index needs of one chunk row, as SQLite holds it."""

    id: int
    chunk_id: str
    vector: bytes
    tokens: str | None  # None when its FTS row is missing (verify reports that)
    language: str
    source: str
    format: str
    metadata: str  # JSON


@dataclass(frozen=True)
class Segment:
    ids: Ints  # chunk row id by position
    digests: np.ndarray[Any, np.dtype[np.int32]]  # digest() of each row's chunk id
    vectors: Floats  # (len(ids), dim), L2-normalised
    lengths: np.ndarray[Any, np.dtype[np.int32]]  # lexical terms per row (BM25's |D|)
    lexical: Postings
    filters: Postings  # rows per filter term (indexed.index.filter_terms)
    # Concurrent exact scans of ``vectors`` share one product.
    batcher: ScanBatcher = field(default_factory=ScanBatcher, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """Every array, by a name a snapshot stores it under."""
        out: dict[str, np.ndarray[Any, Any]] = {
            "ids": self.ids,
            "digests": self.digests,
            "vectors": self.vectors,
            "lengths": self.lengths,
        }
        out.update({f"lexical.{k}": v for k, v in self.lexical.arrays().items()})
        out.update({f"filters.{k}": v for k, v in self.filters.arrays().items()})
        return out

    @staticmethod
    def from_arrays(arrays: dict[str, np.ndarray[Any, Any]]) -> Segment:
        def postings(prefix: str) -> Postings:
            return Postings(
                **{k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            )

        return Segment(
            arrays["ids"],
            arrays["digests"],
            arrays["vectors"],
            arrays["lengths"],
            postings("lexical."),
            postings("filters."),
        )

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays().values())


def build_segment(rows: Iterable[Row], count: int, dim: int) -> Segment:
    """The segment of ``rows`` (``count`` of them, at most; positions follow their order),
    read as they come: nothing but the arrays is kept of a row."""
    ids = np.empty(count, dtype=np.int64)
    digests = np.empty(count, dtype=np.int32)
    vectors = np.zeros((count, dim), dtype=np.float32)
    per_row_filters: list[tuple[str, ...]] = []  # shared tuples: one per distinct metadata
    filters_of = _FilterTerms()
    width = dim * 4

    def terms() -> Iterator[list[str]]:
        for at, row in enumerate(rows):
            ids[at] = row.id
            digests[at] = digest(row.chunk_id)
            if len(row.vector) == width:  # a torn blob (verify reports it) scores 0
                vectors[at] = np.frombuffer(row.vector, dtype=np.float32)
            per_row_filters.append(filters_of(row))
            yield [t if t.isascii() else fts5_folded(t) for t in (row.tokens or "").split()]

    lengths = array("i")
    lexical = build_postings(_counted(terms(), lengths))
    n = len(per_row_filters)
    return Segment(
        ids=ids[:n],
        digests=digests[:n],
        vectors=vectors[:n],
        lengths=np.frombuffer(lengths, dtype=np.int32).copy(),
        lexical=lexical,
        filters=build_postings(per_row_filters),
    )


def _counted(per_row: Iterator[list[str]], lengths: array[int]) -> Iterator[list[str]]:
    for terms in per_row:
        lengths.append(len(terms))
        yield terms


class _FilterTerms:
    """A row's filter terms; chunks of one document share their columns and (mostly) their
    metadata, so each distinct combination is parsed once and its terms shared."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str, str], tuple[str, ...]] = {}

    def __call__(self, row: Row) -> tuple[str, ...]:
        key = (row.language, row.source, row.format, row.metadata)
        terms = self._seen.get(key)
        if terms is None:
            metadata = json.loads(row.metadata or "{}")
            terms = filter_terms(row.language, row.source, row.format, metadata)
            self._seen[key] = terms
        return terms
