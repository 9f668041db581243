"""The contract of an external search index (Milvus, Chroma) under a SQLite catalog.

:class:`~knowhub.providers.stores.indexed.catalog.IndexedStore` keeps documents, chunk text,
citation spans, FAQ and the embedding cache in a SQLite catalog, and hands each chunk's
vector (and, when the index has a lexical leg, its tokens) to a :class:`VectorIndex`. An
index holds rows keyed by the catalog's chunk row ids in named *spaces* (one per
collection), and applies filters itself so that they act inside the search, not after it.

Filters reach an index as :func:`filter_groups` over the :func:`filter_terms` each row
carries: a row matches when, for every group, it holds at least one of the group's terms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from knowhub.models import Filters
from knowhub.providers.embedders.base import Vectors

__all__ = ["IndexRow", "VectorIndex", "filter_groups", "filter_terms"]

# Between a filter key and its value in a term: a key may contain any printable character.
_SEP = "\x1f"
# Filters on these keys read the chunk's column, never its metadata (as in the SQLite store).
_COLUMNS = ("language", "source", "format")


@dataclass(frozen=True)
class IndexRow:
    id: int  # the catalog's chunk row id: never reused, so a stale row can't alias a new one
    terms: tuple[str, ...]  # what filters match (filter_terms)
    tokens: str  # space-separated lexical terms (knowhub's per-language tokens)


class VectorIndex(Protocol):
    name: str  # "milvus", "chroma": names the index in errors and verify reports
    lexical: bool  # True when it serves the lexical leg too (else the catalog's FTS5 does)

    def create(self, space: str, dim: int) -> None:
        """Make the space ready for vectors of ``dim`` (nothing when it exists). A space
        never created reads as empty: searches, ``ids`` and ``delete`` work on it."""

    def drop(self, space: str) -> None: ...

    def upsert(self, space: str, rows: Sequence[IndexRow], vectors: Vectors) -> None:
        """Insert or overwrite rows (one L2-normalised float32 vector each), durably."""

    def delete(self, space: str, ids: Sequence[int]) -> None:
        """Delete rows by id (ids not there are ignored), durably."""

    def dense_search(
        self, space: str, query: Vectors, limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        """(row id, cosine similarity), best first, among rows matching ``groups``."""

    def lexical_search(
        self, space: str, tokens: Sequence[str], limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        """(row id, BM25 score ↑ better), best first; only called when ``lexical``."""

    def ids(self, space: str) -> set[int]:
        """Every row id of the space (verify compares them with the catalog)."""

    def present(self, space: str, ids: Sequence[int]) -> set[int]:
        """Those of ``ids`` the space holds."""

    def close(self) -> None: ...


def filter_terms(
    language: str, source: str, fmt: str, metadata: Mapping[str, Any]
) -> tuple[str, ...]:
    """The terms a chunk's filters can match, with the SQLite store's semantics: columns
    language, source and format; every other key reads the chunk metadata, compared as
    text, a list matching on any of its elements."""
    terms = {_term("language", language), _term("source", source), _term("format", fmt)}
    for key, value in metadata.items():
        if key in _COLUMNS:
            continue
        for item in value if isinstance(value, list) else [value]:
            text = _as_text(item)
            if text is not None:
                terms.add(_term(key, text))
    return tuple(sorted(terms))


def filter_groups(filters: Filters) -> list[list[str]]:
    """One group of terms per filter key; a row must hold a term of every group."""
    return [
        [_term(key, v) for v in (value if isinstance(value, tuple) else (value,))]
        for key, value in filters.items()
    ]


def _term(key: str, value: str) -> str:
    return f"{key}{_SEP}{value}"


def _as_text(value: Any) -> str | None:
    """A JSON value as SQLite's CAST(value AS TEXT) writes it (None never matches)."""
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return json.dumps(value)
    return str(value)
