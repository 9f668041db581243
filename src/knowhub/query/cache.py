"""Small in-process LRU caches for the query path.

Two are used: query text → embedding (encoding is most of a search's time),
and a full-result cache whose key includes the collection's version, so any
ingest into that collection makes its old entries unreachable at once. Each is
bounded by entries and by (approximate) bytes: a hundred hits of long chunks
make one result weigh megabytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from knowhub.providers.embedders.base import Vectors

__all__ = ["LRUCache", "SearchCaches"]

V = TypeVar("V")

QUERY_VECTOR_BYTES = 16 << 20
RESULT_BYTES = 64 << 20
# Passage vectors of sentences scored across languages (knowhub.query.crosslingual): ~18,000
# of 384 dimensions, each a copy of its own (a row of a batch keeps the whole batch alive).
SENTENCE_VECTOR_BYTES = 32 << 20


def _no_weight(value: object) -> int:
    return 0


class LRUCache(Generic[V]):
    """Thread-safe least-recently-used mapping with hit/miss counters.

    At most ``capacity`` entries, and at most ``max_bytes`` by ``weigh`` (0: no byte
    bound); a value heavier than ``max_bytes`` on its own is not kept.
    """

    def __init__(
        self, capacity: int, max_bytes: int = 0, weigh: Callable[[V], int] = _no_weight
    ) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.bytes = 0
        self._weigh = weigh
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key][0]
            self.misses += 1
            return None

    def put(self, key: Hashable, value: V) -> None:
        weight = self._weigh(value)
        if self.capacity <= 0 or (self.max_bytes and weight > self.max_bytes):
            return
        with self._lock:
            old = self._items.pop(key, None)
            self.bytes += weight - (old[1] if old else 0)
            self._items[key] = (value, weight)
            while len(self._items) > self.capacity or (
                self.max_bytes and self.bytes > self.max_bytes
            ):
                self.bytes -= self._items.popitem(last=False)[1][1]

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class SearchCaches:
    """The caches one application instance keeps across searches."""

    query_vectors: LRUCache[Vectors] = field(default_factory=lambda: _vectors(1024))
    # Values are SearchResult objects; typed loosely to keep this module below the pipeline.
    results: LRUCache[Any] = field(default_factory=lambda: _results(256))
    # (collection id, version) → the metadata keys its filters may name (query.filters).
    filter_keys: LRUCache[frozenset[str]] = field(default_factory=lambda: LRUCache(64))
    # (embedder, dimension, sha-1 of a sentence) → its passage vector (query.crosslingual).
    sentence_vectors: LRUCache[Vectors] = field(
        default_factory=lambda: LRUCache(
            1 << 20, SENTENCE_VECTOR_BYTES, lambda vector: int(vector.nbytes) + 256
        )
    )

    @classmethod
    def sized(cls, query_vectors: int, results: int) -> SearchCaches:
        return cls(_vectors(query_vectors), _results(results))


def _vectors(capacity: int) -> LRUCache[Vectors]:
    return LRUCache(capacity, QUERY_VECTOR_BYTES, lambda vector: int(vector.nbytes) + 112)


def _results(capacity: int) -> LRUCache[Any]:
    return LRUCache(capacity, RESULT_BYTES, _result_bytes)


def _result_bytes(result: Any) -> int:
    """A SearchResult's weight, from above: its hits' text (CPython stores at most 4 bytes
    a character) plus a fixed share for each hit's other fields."""
    return 512 + sum(4 * len(hit.text) + 1024 for hit in result.hits)
