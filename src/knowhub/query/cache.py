"""Small in-process LRU caches for the query path.

Two are used: query text → embedding (encoding is most of a search's time),
and a full-result cache whose key includes the collection's version, so any
ingest into that collection makes its old entries unreachable at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from knowhub.providers.embedders.base import Vectors

__all__ = ["LRUCache", "SearchCaches"]

V = TypeVar("V")


class LRUCache(Generic[V]):
    """Thread-safe least-recently-used mapping with hit/miss counters."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
            self.misses += 1
            return None

    def put(self, key: Hashable, value: V) -> None:
        if self.capacity <= 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class SearchCaches:
    """The caches one application instance keeps across searches."""

    query_vectors: LRUCache[Vectors] = field(default_factory=lambda: LRUCache(1024))
    # Values are SearchResult objects; typed loosely to keep this module below the pipeline.
    results: LRUCache[Any] = field(default_factory=lambda: LRUCache(256))

    @classmethod
    def sized(cls, query_vectors: int, results: int) -> SearchCaches:
        return cls(LRUCache(query_vectors), LRUCache(results))
