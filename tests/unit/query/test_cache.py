"""The query path's LRU caches: bounded by entries and by bytes."""

from __future__ import annotations

import numpy as np

from knowhub.query.cache import LRUCache, SearchCaches


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: LRUCache[str] = LRUCache(2)
    cache.put("a", "1")
    cache.put("b", "2")
    assert cache.get("a") == "1"
    cache.put("c", "3")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("1", None, "3")


def test_a_cache_is_bounded_in_bytes_and_skips_values_heavier_than_the_bound() -> None:
    cache: LRUCache[bytes] = LRUCache(100, max_bytes=10, weigh=len)
    for key in "abc":
        cache.put(key, b"xxxx")  # 12 bytes for three: the oldest goes
    assert cache.get("a") is None and len(cache) == 2 and cache.bytes == 8
    cache.put("b", b"x")  # replacing a value counts its new weight only
    assert cache.bytes == 5
    cache.put("huge", b"x" * 11)
    assert cache.get("huge") is None and cache.bytes == 5


def test_search_caches_weigh_vectors_by_their_size() -> None:
    caches = SearchCaches.sized(1000, 10)
    vector = np.zeros(1 << 20, dtype=np.float32)  # 4 MiB
    for n in range(10):
        caches.query_vectors.put(n, vector)
    assert 0 < caches.query_vectors.bytes <= caches.query_vectors.max_bytes
    assert len(caches.query_vectors) < 10
