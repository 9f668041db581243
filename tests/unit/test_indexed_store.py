"""The catalog + external index logic of IndexedStore, against an in-memory index that can
fail at any step (knowhub.testing.memory_index; the real Milvus and Chroma indexes run the
contract suite).

The failures stand for a process killed, or a server lost, between the steps of a write:
the catalog must stay the truth, searches must never show a row it does not hold, and the
next write must clean up what the interrupted one left in the index."""

from __future__ import annotations

import fcntl
import json
import logging
import random
from pathlib import Path

import numpy as np
import pytest

from knowhub.models import Filters
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.indexed.catalog import IndexedStore
from knowhub.providers.stores.indexed.index import IndexRow
from knowhub.providers.stores.sqlite import SQLiteStore
from knowhub.testing.memory_index import IndexDownError, MemoryIndex, RacingIndex
from knowhub.testing.store_data import DIM, EMBEDDER, assert_whole, axis, make_doc, put


@pytest.fixture
def index() -> MemoryIndex:
    return MemoryIndex()


@pytest.fixture
def store(tmp_path: Path, index: MemoryIndex) -> IndexedStore:
    return IndexedStore(tmp_path / "catalog.sqlite3", index, "kh_")


def _journal(store: IndexedStore) -> list[tuple[str, list[int]]]:
    rows = store._db.execute("SELECT op, ids FROM index_journal ORDER BY id").fetchall()
    return [(op, json.loads(ids)) for op, ids in rows]


def _sources(
    store: IndexedStore, cid: int, query: Vectors, filters: Filters | None = None, limit: int = 10
) -> list[str]:
    found = store.dense_search(cid, query, limit, filters or {})
    hits = store.hits([row_id for row_id, _ in found])
    return [hits[row_id].source for row_id, _ in found]


def test_a_write_reaches_the_index_under_the_catalog_row_ids(
    store: IndexedStore, index: MemoryIndex
) -> None:
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    put(store, cid, make_doc("a.md", ["alpha one", "alpha two"], vectors=[axis(0), axis(1)]))
    assert index.ids(store.space(cid)) == set(store.chunk_sources(cid))
    assert _sources(store, cid, axis(1))[0] == "a.md"
    assert _journal(store) == []
    assert_whole(store)


def test_an_index_failure_before_the_commit_leaves_the_old_document(
    store: IndexedStore, index: MemoryIndex
) -> None:
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    put(store, cid, make_doc("a.md", ["old text"], vectors=[axis(0)]))
    before = store.chunk_sources(cid)
    new = make_doc("a.md", ["new text", "more"], vectors=[axis(2), axis(3)], revision=1)
    index.fail = "upsert"
    with pytest.raises(IndexDownError):
        put(store, cid, new)
    assert store.chunk_sources(cid) == before  # the catalog never saw the new version
    assert [op for op, _ in _journal(store)] == ["pending"]
    assert _sources(store, cid, axis(0)) == ["a.md"]
    # The next write replays the journal first: the index ends as the catalog is.
    put(store, cid, make_doc("b.md", ["other"], vectors=[axis(5)]))
    assert _journal(store) == []
    assert index.ids(store.space(cid)) == set(store.chunk_sources(cid))
    assert store.orphans(cid) == []


def test_new_rows_written_before_the_commit_stay_invisible(
    store: IndexedStore, index: MemoryIndex
) -> None:
    """A write stopped after the index upsert: its rows outscore everything, yet no search
    returns them, and a search still fills its limit from live rows."""
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    put(store, cid, make_doc("a.md", ["a0", "a1", "a2"], vectors=[axis(0)] * 3))
    rows = [IndexRow(10_000 + i, (), "") for i in range(5)]
    index.upsert(store.space(cid), rows, np.stack([axis(7)] * 5))
    with store._lock, store.transaction() as db:
        store._journal(db, cid, "pending", [r.id for r in rows])
    found = store.dense_search(cid, axis(7), 3, {})
    assert len(found) == 3 and {r for r, _ in found} <= set(store.chunk_sources(cid))
    assert store.orphans(cid) == []  # journaled: cleaned by the next write, not orphans


def test_a_failed_delete_after_the_commit_is_retried_by_the_next_write(
    store: IndexedStore, index: MemoryIndex, caplog: pytest.LogCaptureFixture
) -> None:
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    old = put(store, cid, make_doc("a.md", ["old text"], vectors=[axis(0)]))
    old_ids = set(store.chunk_sources(cid))
    index.fail = "delete"
    with caplog.at_level(logging.WARNING, logger="knowhub.store"):
        put(store, cid, make_doc("a.md", ["new text"], vectors=[axis(0)], revision=1))
    assert "deleting 1 replaced rows failed" in caplog.text
    assert old_ids <= index.ids(store.space(cid))  # the stale row is still in the index…
    found = store.dense_search(cid, axis(0), 5, {})
    assert [store.hits([r])[r].doc_hash for r, _ in found] != [old.record.doc_hash]
    assert not old_ids & {r for r, _ in found}  # …but never found
    store.remove_document(cid, "/corpus/none.md")  # any write replays the journal
    assert index.ids(store.space(cid)) == set(store.chunk_sources(cid))
    assert _journal(store) == []


def test_a_drop_interrupted_before_the_index_drop_is_finished_by_the_next_write(
    store: IndexedStore, index: MemoryIndex
) -> None:
    cid = store.ensure_collection("old", EMBEDDER, DIM)
    put(store, cid, make_doc("a.md", ["text"], vectors=[axis(0)]))
    index.fail = "drop"
    with pytest.raises(IndexDownError):
        store.drop_collection(cid)
    assert store.collection_id("old") is None  # the catalog's drop committed
    assert store.space(cid) in index.spaces and [op for op, _ in _journal(store)] == ["drop"]
    other = store.ensure_collection("new", EMBEDDER, DIM)
    put(store, other, make_doc("b.md", ["text"], vectors=[axis(1)]))
    assert store.space(cid) not in index.spaces
    assert _journal(store) == []


def test_row_ids_are_never_reused(store: IndexedStore) -> None:
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    seen: set[int] = set()
    for revision in range(4):
        put(store, cid, make_doc("a.md", ["x", "y"], revision=revision, seed=revision))
        ids = set(store.chunk_sources(cid))
        assert not ids & seen
        seen |= ids
        store.remove_document(cid, "/corpus/a.md")  # frees the largest ids every time


def test_verify_sees_missing_and_stray_index_rows_and_fix_removes_strays(
    store: IndexedStore, index: MemoryIndex
) -> None:
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    put(store, cid, make_doc("a.md", ["one", "two"], vectors=[axis(0), axis(1)]))
    space = store.space(cid)
    first, second = sorted(index.ids(space))
    index.delete(space, [first])
    index.upsert(space, [IndexRow(99_999, (), "")], np.stack([axis(4)]))
    stored = store.stored_chunks(cid, "/corpus/a.md")
    assert [s.vector is None for s in stored] == [True, False]
    assert store.orphans(cid)[0].key == "memory row 99999"
    assert store.integrity_report()["index_mismatch"] == 2
    assert store.remove_orphans(cid) == 1
    assert index.ids(space) == {second}


def test_a_lexical_index_serves_the_lexical_leg(tmp_path: Path) -> None:
    index = MemoryIndex(lexical=True)
    store = IndexedStore(tmp_path / "catalog.sqlite3", index, "kh_")
    cid = store.ensure_collection("docs", EMBEDDER, DIM)
    doc = put(store, cid, make_doc("a.md", ["giraffe acacia", "okapi forest"]))
    found = store.lexical_search(cid, doc.tokens[1].split(), 5, {})
    assert [store.hits([r])[r].text for r, _ in found] == ["okapi forest"]
    index.spaces[store.space(cid)].clear()  # the catalog's FTS5 is not what answered
    assert store.lexical_search(cid, doc.tokens[1].split(), 5, {}) == []


def test_filters_match_what_the_sqlite_store_matches(tmp_path: Path) -> None:
    """Random metadata and filters: the index's term matching keeps exactly the rows the
    SQLite store's SQL keeps (lists match any element, booleans as 1/0, numbers as text)."""
    rng = random.Random(7)
    values: list[object] = ["ops", "dev", 1, 2.5, True, False, None, ["ops", "qa"], [1, "x"]]
    sqlite = SQLiteStore(tmp_path / "plain.sqlite3")
    indexed = IndexedStore(tmp_path / "catalog.sqlite3", MemoryIndex(), "kh_")
    cids = [s.ensure_collection("docs", EMBEDDER, DIM) for s in (sqlite, indexed)]
    for n in range(30):
        meta = [{"team": rng.choice(values), "level": rng.choice(values)} for _ in range(3)]
        doc = make_doc(
            f"d{n}.md",
            [f"text {n} {i}" for i in range(3)],
            seed=n,
            fmt=rng.choice(["markdown", "pdf"]),
            chunk_metadata=meta,
        )
        for store, cid in zip((sqlite, indexed), cids, strict=True):
            put(store, cid, doc)
    choices = ["ops", "dev", "qa", "1", "2.5", "0", "x", "markdown", "pdf", "d3.md"]
    for _ in range(60):
        keys = rng.sample(["team", "level", "format", "source"], rng.randint(1, 2))
        filters: Filters = {
            k: tuple(rng.sample(choices, rng.randint(1, 3)))
            if rng.random() < 0.5
            else rng.choice(choices)
            for k in keys
        }
        expected = {
            sqlite.hits([r])[r].chunk_id
            for r, _ in sqlite.dense_search(cids[0], axis(0), 90, filters)
        }
        got = {
            indexed.hits([r])[r].chunk_id
            for r, _ in indexed.dense_search(cids[1], axis(0), 90, filters)
        }
        assert got == expected, filters


def test_a_replace_committed_between_the_search_and_its_check_is_searched_again(
    tmp_path: Path,
) -> None:
    """The search read the old rows, then another connection replaced the document before
    the catalog check: checked alone, the result would hold neither version."""
    index = RacingIndex()
    reader = IndexedStore(tmp_path / "catalog.sqlite3", index, "kh_")
    writer = IndexedStore(tmp_path / "catalog.sqlite3", index, "kh_")
    cid = writer.ensure_collection("docs", EMBEDDER, DIM)
    put(writer, cid, make_doc("a.md", ["old text"], vectors=[axis(0)]))
    new = make_doc("a.md", ["new text"], vectors=[axis(0)], revision=1)
    index.after_search = lambda: put(writer, cid, new)
    found = reader.dense_search(cid, axis(0), 5, {})
    assert [reader.hits([r])[r].text for r, _ in found] == ["new text"]


def test_a_search_outpaced_by_writes_finally_runs_between_two_of_them(tmp_path: Path) -> None:
    """Every search is followed by another replace, as beside an ingest faster than the
    index searches: after a few tries the store searches holding the writers' lock."""
    index = RacingIndex()
    reader = IndexedStore(tmp_path / "catalog.sqlite3", index, "kh_")
    writer = IndexedStore(tmp_path / "catalog.sqlite3", index, "kh_")
    cid = writer.ensure_collection("docs", EMBEDDER, DIM)
    put(writer, cid, make_doc("a.md", ["text r0"], vectors=[axis(0)]))
    revisions = [0]

    def replace_unless_locked() -> None:
        with reader._lock_file.open("a+") as handle:
            try:  # held by the reader: a write would wait for it (here, forever)
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(handle, fcntl.LOCK_UN)
        revisions.append(revisions[-1] + 1)
        r = revisions[-1]
        put(writer, cid, make_doc("a.md", [f"text r{r}"], vectors=[axis(0)], revision=r))
        index.after_search = replace_unless_locked

    index.after_search = replace_unless_locked
    found = reader.dense_search(cid, axis(0), 5, {})
    assert [reader.hits([r])[r].text for r, _ in found] == [f"text r{revisions[-1]}"]
    assert len(revisions) > 2, "the writes did not outpace the search"
