"""SQLite: the in-memory dense matrices are a cache bounded in bytes, oldest search first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowhub.providers.stores import sqlite
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from tests.contract.conftest import DIM, make_doc, new_collection, put


def test_matrices_past_the_byte_bound_are_dropped_least_recently_searched_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / DB_NAME)
    cids = [new_collection(store, name) for name in ("a", "b", "c")]
    for n, cid in enumerate(cids):
        put(store, cid, make_doc(f"{n}.md", ["one", "two"], collection="abc"[n], seed=n))
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    found = [store.dense_search(cid, query, 5, {}) for cid in cids]
    assert list(store._matrices) == cids  # all three fit in the default bound

    one = store._matrices[cids[0]]
    monkeypatch.setattr(sqlite, "_MATRIX_CACHE_BYTES", 2 * (one.vectors.nbytes + one.ids.nbytes))
    store.dense_search(cids[0], query, 5, {})  # now the most recently searched
    store.dense_search(cids[2], query, 5, {})  # still cached (nothing loaded, none dropped)
    assert list(store._matrices) == [cids[1], cids[0], cids[2]]
    store._matrices.pop(cids[1])  # as if b had changed: the next search reloads it
    assert store.dense_search(cids[1], query, 5, {}) == found[1]
    assert list(store._matrices) == [cids[2], cids[1]]  # a, searched least lately, went
    assert store.dense_search(cids[0], query, 5, {}) == found[0]  # and reloads when searched
    monkeypatch.setattr(sqlite, "_MATRIX_CACHE_BYTES", 1)  # smaller than any one matrix
    assert store.dense_search(cids[2], query, 5, {}) == found[2]
    assert list(store._matrices) == [cids[2]]  # the one just loaded stays, even over it
    store.close()
