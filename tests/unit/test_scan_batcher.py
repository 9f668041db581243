"""Concurrent exact scans share one matrix product, and none waits forever when it fails."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from knowhub.providers.stores.derived.batching import ScanBatcher
from tests.helpers import WAIT_S

QUERIES = 12


class _HeldMatrix:
    """A matrix whose first product waits until every other query is queued behind it."""

    def __init__(self, array: np.ndarray, batcher: ScanBatcher, fail: bool = False) -> None:
        self.array, self.batcher, self.fail = array, batcher, fail
        self.calls = 0

    def __matmul__(self, other: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            deadline = time.monotonic() + WAIT_S
            while len(self.batcher._waiting) < QUERIES - 1 and time.monotonic() < deadline:
                time.sleep(0.001)
        if self.fail:
            raise MemoryError("no room for the product")
        return self.array @ other


def _run_all(batcher: ScanBatcher, matrix: Any, queries: np.ndarray) -> list[Any]:
    out: list[Any] = [None] * len(queries)

    def one(i: int) -> None:
        try:
            out[i] = batcher.scores(matrix, queries[i])
        except MemoryError as exc:
            out[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_S)
        assert not t.is_alive(), "a query waited forever"
    return out


def test_queries_arriving_during_a_scan_are_scored_together_and_exactly() -> None:
    rng = np.random.default_rng(0)
    array = rng.standard_normal((500, 16)).astype(np.float32)
    queries = rng.standard_normal((QUERIES, 16)).astype(np.float32)
    batcher = ScanBatcher()
    got = _run_all(batcher, _HeldMatrix(array, batcher), queries)
    for query, scores in zip(queries, got, strict=True):
        assert np.allclose(scores, array @ query, atol=1e-5)
    assert batcher.products == 2  # the first alone, the eleven that queued behind it at once


def test_a_failed_product_fails_every_query_of_its_batch() -> None:
    rng = np.random.default_rng(1)
    array = rng.standard_normal((50, 8)).astype(np.float32)
    queries = rng.standard_normal((QUERIES, 8)).astype(np.float32)
    batcher = ScanBatcher()
    got = _run_all(batcher, _HeldMatrix(array, batcher, fail=True), queries)
    assert all(isinstance(g, MemoryError) for g in got)
    assert batcher.scores(array, queries[0]) == pytest.approx(array @ queries[0], abs=1e-5)
