"""SQLite: the derived search index ranks as FTS5 and an exact scan do, and stays current.

The lexical leg is checked against FTS5's own ``bm25()`` on the same table, the dense leg
against a numpy scan of the stored vectors, both with filters; then the index is kept
current across store instances (as across processes), opened from a snapshot, rebuilt
when its snapshot is damaged, foreign or older than the pruned log, and repaired by
``remove_orphans`` (``verify --fix``).
"""

from __future__ import annotations

import json
import logging
import random
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from knowhub.ingest.pipeline import IngestReport, ingest
from knowhub.ingest.verify import render_verify, verify_index
from knowhub.lang import query_tokens
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.providers.stores.derived import live
from knowhub.providers.stores.derived.changes import FINGERPRINT_SQL
from knowhub.providers.stores.derived.live import IndexOptions
from knowhub.providers.stores.derived.segment import DIGEST_SQL, digest
from knowhub.providers.stores.schema import fts_table
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.store_data import DIM, make_doc, new_collection, put
from tests.helpers import fast_settings, write

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "river",
    "stone",
    "cloud",
    "forest",
    "winter",
    "summer",
    "engine",
    "signal",
    "market",
    "café",
    "cafe",
    "naïve",
    "naive",
    "über",
    "łódź",
]
TEAMS = ("t0", "t1", "t2")


def _texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(n)]


def _fill(store: SQLiteStore, cid: int, docs: int, seed: int = 0, start: int = 0) -> None:
    rng = random.Random(seed)
    for n in range(start, start + docs):
        put(
            store,
            cid,
            make_doc(
                f"d{n}.md", _texts(rng, rng.randint(1, 8)), seed=n, metadata={"team": TEAMS[n % 3]}
            ),
        )


def _fts5(store: SQLiteStore, cid: int, tokens: list[str], team: str | None) -> dict[int, float]:
    match = " OR ".join(f'"{t}"' for t in tokens)
    fts = fts_table(cid)
    where = ""
    params: list[object] = [match]
    if team is not None:
        where = " AND f.rowid IN (SELECT id FROM chunks WHERE json_extract(metadata, '$.team') = ?)"
        params.append(team)
    rows = store._db.execute(
        f"SELECT f.rowid, bm25({fts}) FROM {fts} f WHERE {fts} MATCH ?{where}", params
    ).fetchall()
    return {int(r): -float(s) for r, s in rows}


def _exact(store: SQLiteStore, cid: int, query: np.ndarray, team: str | None) -> list[int]:
    rows = store._db.execute(
        "SELECT id, vector, metadata FROM chunks WHERE collection_id = ? ORDER BY id", (cid,)
    ).fetchall()
    kept = [r for r in rows if team is None or f'"team": "{team}"' in r[2]]
    scores = np.stack([np.frombuffer(r[1], np.float32) for r in kept]) @ query
    order = np.lexsort(([r[0] for r in kept], -scores))
    return [int(kept[i][0]) for i in order]


@pytest.mark.parametrize("team", [None, "t1"])
def test_lexical_scores_are_fts5_bm25_and_dense_is_the_exact_scan(
    tmp_path: Path, team: str | None
) -> None:
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = new_collection(store)
    _fill(store, cid, 60)
    store.remove_document(cid, "/corpus/d7.md")  # a deleted row must leave the statistics
    filters = {} if team is None else {"team": team}
    queries = (
        "alpha river",
        "omega omega stone winter",
        "signal",
        "nothing here",
        "cafe naïve",
        "café über lodz",
    )
    for query in queries:
        tokens = query_tokens(query)
        want = _fts5(store, cid, tokens, team)
        got = store.lexical_search(cid, tokens, 1000, filters)
        assert {i for i, _ in got} == set(want)
        for row_id, score in got:
            assert score == pytest.approx(want[row_id], rel=1e-9, abs=1e-12)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    query = np.random.default_rng(3).standard_normal(DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    got_dense = store.dense_search(cid, query, 15, filters)
    assert [i for i, _ in got_dense] == _exact(store, cid, query, team)[:15]
    store.close()


def test_another_instance_sees_every_write_through_the_change_log(tmp_path: Path) -> None:
    reader = SQLiteStore(tmp_path / DB_NAME)
    cid = new_collection(reader)
    _fill(reader, cid, 20)
    query = query_tokens("alpha beta river")
    before = reader.lexical_search(cid, query, 1000, {})
    writer = SQLiteStore(tmp_path / DB_NAME)  # another process, as far as indexes go
    _fill(writer, cid, 10, seed=1, start=20)  # new documents
    _fill(writer, cid, 5, seed=2, start=0)  # d0..d4 replaced by other text
    writer.remove_document(cid, "/corpus/d9.md")
    after = reader.lexical_search(cid, query, 1000, {})
    assert after != before
    assert len(reader._derived.current(reader._db, cid).segments) > 1  # caught up, not rebuilt
    fresh = SQLiteStore(tmp_path / DB_NAME)  # rebuilt from SQLite
    assert after == fresh.lexical_search(cid, query, 1000, {})
    assert {i for i, _ in after} == set(_fts5(fresh, cid, query, None))
    for store in (reader, writer, fresh):
        store.close()


def test_a_snapshot_opens_without_a_rebuild_and_a_damaged_one_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    options = IndexOptions(snapshot_min_chunks=10)
    store = SQLiteStore(tmp_path / DB_NAME, options)
    cid = new_collection(store)
    _fill(store, cid, 30)
    query = query_tokens("gamma winter")
    want = store.lexical_search(cid, query, 50, {})  # the first search builds and saves
    store.refresh_index(cid)
    folder = tmp_path / f"{DB_NAME}.index" / str(cid)
    assert [p.name[:1] for p in folder.iterdir()] == ["v"]

    rebuilds = _rebuilds(monkeypatch)
    reopened = SQLiteStore(tmp_path / DB_NAME, options)
    assert reopened.lexical_search(cid, query, 50, {}) == want
    assert rebuilds == []
    assert reopened.orphans(cid) == []

    snap = next(folder.iterdir())
    (snap / "lexical.rows.npy").write_bytes(b"torn")  # cut short: seen as it opens
    with caplog.at_level(logging.WARNING, logger="knowhub.store"):
        torn = SQLiteStore(tmp_path / DB_NAME, options)
        assert torn.lexical_search(cid, query, 50, {}) == want
    assert rebuilds == [1] and "unreadable" in caplog.text

    snap = next(folder.iterdir())  # the rebuilt one
    vectors = bytearray((snap / "vectors.npy").read_bytes())
    vectors[-8:] = b"\x00\x00\x80\x7f" * 2  # same size, other bytes: only a CRC sees it
    (snap / "vectors.npy").write_bytes(bytes(vectors))
    damaged = SQLiteStore(tmp_path / DB_NAME, options)
    assert [o.kind for o in damaged.orphans(cid)] == ["derived"]
    assert damaged.remove_orphans(cid) == 1
    assert damaged.orphans(cid) == []
    assert damaged.lexical_search(cid, query, 50, {}) == want
    for s in (store, reopened, torn, damaged):
        s.close()


def _rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Appended to at each rebuild of a derived index from SQLite."""
    rebuilds: list[int] = []
    real = live.DerivedIndexes._rebuild
    monkeypatch.setattr(
        live.DerivedIndexes, "_rebuild", lambda self, *a: rebuilds.append(1) or real(self, *a)
    )
    return rebuilds


def _snapshotted(tmp_path: Path, options: IndexOptions) -> tuple[SQLiteStore, int]:
    """A store of 30 documents whose index has a snapshot on disk, and the collection."""
    store = SQLiteStore(tmp_path / DB_NAME, options)
    cid = new_collection(store)
    _fill(store, cid, 30)
    store.refresh_index(cid)
    return store, cid


def test_a_snapshot_of_other_rows_is_not_trusted_and_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = IndexOptions(snapshot_min_chunks=10)
    store, cid = _snapshotted(tmp_path, options)
    # The store goes back to a backup without the last documents, at the same version.
    store._db.execute(
        "DELETE FROM chunks WHERE document_id IN (SELECT id FROM documents "
        "WHERE path = '/corpus/d29.md')"
    )
    store._db.execute("DELETE FROM documents WHERE path = '/corpus/d29.md'")
    restored = SQLiteStore(tmp_path / DB_NAME, options)
    held = restored._derived.current(restored._db, cid).row_ids()
    rows = {
        r[0] for r in restored._db.execute("SELECT id FROM chunks WHERE collection_id = ?", (cid,))
    }
    assert held == rows
    rebuilds = _rebuilds(monkeypatch)  # the rebuilt index's snapshot took the foreign one's place
    after = SQLiteStore(tmp_path / DB_NAME, options)
    assert after._derived.current(after._db, cid).row_ids() == rows and rebuilds == []
    for s in (store, restored, after):
        s.close()


def test_a_snapshot_of_another_format_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As after an upgrade: the first process rebuilds, the next opens its snapshot."""
    options = IndexOptions(snapshot_min_chunks=10)
    store, cid = _snapshotted(tmp_path, options)
    (snap,) = (tmp_path / f"{DB_NAME}.index" / str(cid)).iterdir()
    meta = json.loads((snap / "snapshot.json").read_text(encoding="utf-8"))
    (snap / "snapshot.json").write_text(json.dumps(meta | {"format": meta["format"] - 1}))
    rebuilds = _rebuilds(monkeypatch)
    query = query_tokens("alpha river")
    upgraded = SQLiteStore(tmp_path / DB_NAME, options)
    want = upgraded.lexical_search(cid, query, 20, {})
    assert rebuilds == [1]
    after = SQLiteStore(tmp_path / DB_NAME, options)
    assert after.lexical_search(cid, query, 20, {}) == want and rebuilds == [1]
    for s in (store, upgraded, after):
        s.close()


def test_an_index_older_than_the_pruned_log_reloads(tmp_path: Path) -> None:
    options = IndexOptions(snapshot_min_chunks=10, min_tail_rows=10)
    old = SQLiteStore(tmp_path / DB_NAME, options)
    cid = new_collection(old)
    _fill(old, cid, 15)
    query = query_tokens("kappa sigma engine")
    old.lexical_search(cid, query, 50, {})
    writer = SQLiteStore(tmp_path / DB_NAME, options)
    # Enough rows to compact (a rebuild and a snapshot), then a prune up to it.
    _fill(writer, cid, 40, seed=5, start=15)
    writer.refresh_index(cid)
    assert writer._db.execute("SELECT count(*) FROM changes").fetchone()[0] == 0
    _fill(writer, cid, 3, seed=6, start=500)
    fresh = SQLiteStore(tmp_path / DB_NAME, options)
    assert old.lexical_search(cid, query, 50, {}) == fresh.lexical_search(cid, query, 50, {})
    for s in (old, writer, fresh):
        s.close()


def test_big_collections_search_an_hnsw_graph_with_exact_scores(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((20, DIM)).astype(np.float32)
    store = SQLiteStore(tmp_path / DB_NAME, IndexOptions(ann_min_chunks=500))
    cid = new_collection(store)
    for n in range(60):
        vectors = centers[rng.integers(0, 20, 25)] + 0.3 * rng.standard_normal((25, DIM))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        put(
            store,
            cid,
            make_doc(
                f"d{n}.md",
                [f"text {n} {i}" for i in range(25)],
                vectors=vectors,
                metadata={"team": TEAMS[n % 3]},
            ),
        )
    assert store._derived.current(store._db, cid).ann is not None
    hits = recall = 0
    for q in range(30):
        query = centers[q % 20] + 0.5 * rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)
        for team in (None, "t2"):
            filters = {} if team is None else {"team": team}
            got = store.dense_search(cid, query, 10, filters)
            exact = _exact(store, cid, query, team)[:10]
            recall += len({i for i, _ in got} & set(exact))
            hits += 10
            vectors = dict(store._db.execute("SELECT id, vector FROM chunks").fetchall())
            for row_id, score in got:  # scores are exact, whatever found the row
                assert score == pytest.approx(
                    float(np.frombuffer(vectors[row_id], np.float32) @ query), abs=1e-5
                )
            if team is not None:
                assert {i for i, _ in got} <= set(_exact(store, cid, query, team))
    assert recall / hits >= 0.95
    store.close()


def test_indexes_past_the_byte_bound_are_dropped_least_recently_searched_first(
    tmp_path: Path,
) -> None:
    roomy = SQLiteStore(tmp_path / DB_NAME)
    cids = [new_collection(roomy, name) for name in ("a", "b", "c")]
    for n, cid in enumerate(cids):
        put(roomy, cid, make_doc(f"{n}.md", ["one", "two"], collection="abc"[n], seed=n))
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    found = [roomy.dense_search(cid, query, 5, {}) for cid in cids]
    assert list(roomy._derived._indexes) == cids  # all three fit in the default bound
    size = roomy._derived._indexes[cids[0]].nbytes
    roomy.close()

    # Room for two (the three are alike), in a store that loads them as they are searched.
    store = SQLiteStore(tmp_path / DB_NAME, IndexOptions(cache_bytes=2 * size + 1))
    cache = store._derived._indexes
    assert [store.dense_search(cid, query, 5, {}) for cid in cids[:2]] == found[:2]
    store.dense_search(cids[0], query, 5, {})  # now the most recently searched
    assert list(cache) == [cids[1], cids[0]]  # still cached (nothing loaded, none dropped)
    assert store.dense_search(cids[2], query, 5, {}) == found[2]
    assert list(cache) == [cids[0], cids[2]]  # b, searched least lately, went
    assert store.dense_search(cids[1], query, 5, {}) == found[1]  # reloaded
    assert list(cache) == [cids[2], cids[1]]  # a, searched least lately, went
    store.close()

    tight = SQLiteStore(tmp_path / DB_NAME, IndexOptions(cache_bytes=1))  # under any one index
    for cid, want in zip(cids, found, strict=True):
        assert tight.dense_search(cid, query, 5, {}) == want
        assert list(tight._derived._indexes) == [cid]  # the one just loaded stays, even over it
    tight.close()


def test_verify_reports_a_damaged_index_snapshot_and_fix_rebuilds_it(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data", **{"chunking.size": 200, "chunking.overlap": 20})
    store = SQLiteStore(tmp_path / "data" / DB_NAME, IndexOptions(snapshot_min_chunks=10))
    embedder = HashingEmbedder(settings.embedder.hashing.dim)
    rng = random.Random(4)
    for n in range(6):
        write(tmp_path / "docs" / f"d{n}.md", "\n\n".join(_texts(rng, 12)))

    def reingest(
        paths: Sequence[Path], name: str, tags: Mapping[str, str], include: Sequence[str]
    ) -> IngestReport:
        return ingest(store, embedder, settings, paths, name, tags, include)

    reingest([tmp_path / "docs"], "kb", {}, [])  # its end writes the index snapshot
    embedders = {"kb": (embedder.model_id, embedder.dim)}
    assert verify_index(store, embedders).ok
    folder = tmp_path / "data" / f"{DB_NAME}.index"
    (snap,) = (p for p in folder.glob("*/v*"))
    vectors = bytearray((snap / "vectors.npy").read_bytes())
    vectors[-4:] = b"\x00\x00\x80\x7f"
    (snap / "vectors.npy").write_bytes(bytes(vectors))
    found = verify_index(store, embedders)
    assert [p.kind for p in found.problems] == ["orphan_derived"]
    assert "rebuilds it" in render_verify(found)
    fixed = verify_index(store, embedders, reingest)
    assert fixed.ok and fixed.fixed
    assert verify_index(store, embedders).ok
    store.close()


def test_many_small_writes_merge_the_small_segments_and_keep_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = new_collection(store)
    _fill(store, cid, 40)
    query = query_tokens("alpha omega market")
    store.lexical_search(cid, query, 1000, {})
    base = store._derived.current(store._db, cid).segments[0]
    rebuilds: list[int] = []
    real = live.DerivedIndexes._rebuild
    monkeypatch.setattr(
        live.DerivedIndexes, "_rebuild", lambda self, *a: rebuilds.append(1) or real(self, *a)
    )
    for n in range(40):  # a watched folder: one document at a time, searched between
        _fill(store, cid, 1, seed=100 + n, start=n % 5 if n % 2 else 40 + n)
        got = store.lexical_search(cid, query, 1000, {})
        segments = store._derived.current(store._db, cid).segments
        assert len(segments) <= 17 and segments[0] is base
    assert rebuilds == []
    assert got == SQLiteStore(tmp_path / DB_NAME).lexical_search(cid, query, 1000, {})
    store.close()


def test_a_restored_backup_written_again_is_not_served_from_the_newer_snapshot(
    tmp_path: Path,
) -> None:
    options = IndexOptions(snapshot_min_chunks=10)
    data = tmp_path / DB_NAME
    store = SQLiteStore(data, options)
    cid = new_collection(store)
    _fill(store, cid, 30)
    store.close()
    backup = data.read_bytes()  # (the WAL was checkpointed as the store closed)
    store = SQLiteStore(data, options)
    put(store, cid, make_doc("x.md", ["zebra stripes"], seed=90))
    store.refresh_index(cid)  # a snapshot holding "zebra"
    store.close()
    for leftover in tmp_path.glob(f"{DB_NAME}-*"):
        leftover.unlink()
    data.write_bytes(backup)  # the index folder stays
    store = SQLiteStore(data, options)
    put(store, cid, make_doc("x.md", ["walrus tusks"], seed=90))  # same ids, same version
    fresh = SQLiteStore(data, options)
    assert fresh.lexical_search(cid, query_tokens("zebra"), 10, {}) == []
    assert len(fresh.lexical_search(cid, query_tokens("walrus"), 10, {})) == 1
    assert fresh.orphans(cid) == []
    store.close()
    fresh.close()


def test_the_content_digest_is_the_same_in_python_and_in_sql() -> None:
    db = sqlite3.connect(":memory:")
    for chunk_id in ["abcdef0123456789_0001_0f3a9c2e", "x", "", "zz", "0A", "_0001_ff", "é", "😀"]:
        (got,) = db.execute(
            f"SELECT coalesce({DIGEST_SQL}, 0) FROM (SELECT ? AS chunk_id) k", (chunk_id,)
        ).fetchone()
        assert got == digest(chunk_id), chunk_id


def test_the_fingerprint_reads_a_covering_index_which_an_older_store_gains(
    tmp_path: Path,
) -> None:
    """A fresh process checks a snapshot against the fingerprint: reading the chunk rows
    (their text and vectors) for it cost 0.38 s at 100k chunks."""
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = new_collection(store)
    _fill(store, cid, 4)
    store._db.execute("DROP INDEX chunks_fingerprint")  # as a store of the previous release
    store.close()
    reopened = SQLiteStore(tmp_path / DB_NAME)
    plan = reopened._db.execute(f"EXPLAIN QUERY PLAN {FINGERPRINT_SQL}", (cid,)).fetchall()
    assert any("COVERING INDEX chunks_fingerprint" in str(step) for step in plan), plan
    assert reopened.lexical_search(cid, query_tokens("alpha"), 5, {})
    reopened.close()
