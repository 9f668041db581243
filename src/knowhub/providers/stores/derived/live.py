"""Keeping each collection's derived index current with SQLite, in every process.

SQLite is the source of truth. An index at version ``v`` catches up with the collection at
``w`` by re-reading the rows the change log names for the writes in between (one new small
segment, the replaced rows masked out of the old ones); a process with no index opens the
newest snapshot and catches up from it; one whose snapshot is missing, foreign, corrupt or
older than the log's floor rebuilds from SQLite. Rebuilds *compact*: one segment, an ANN
graph when the collection is big, and a snapshot on disk for the next process.

Only writers prune the log (:meth:`DerivedIndexes.refresh`, run at the end of an ingest):
a search never takes SQLite's write lock, so it never waits behind an ingest.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knowhub.providers.stores.derived import changes, snapshot
from knowhub.providers.stores.derived.ann import Ann
from knowhub.providers.stores.derived.index import CollectionIndex
from knowhub.providers.stores.derived.segment import Segment, build_segment

__all__ = ["EF_SCALE_ROWS", "DerivedIndexes", "IndexOptions", "ef_search"]

log = logging.getLogger("knowhub.store")

# Compact (rebuild as one segment) once rows written or removed since the last compaction
# pass this share of the base segment; past this many segments, the small ones are merged.
_TAIL_SHARE = 0.2
_MIN_TAIL_ROWS = 2000
_MAX_SEGMENTS = 16
# A collection keeps its HNSW graph down to this share of store.sqlite.ann_min_chunks.
_ANN_KEPT = 0.9
# Indexes of collections searched least recently are dropped past this (re-opened from
# their snapshot when searched again); the one just used always stays.
_CACHE_BYTES = 2 << 30


EF_SCALE_ROWS = 160_000


@dataclass(frozen=True)
class IndexOptions:
    ann_min_chunks: int = 50000  # an HNSW graph for collections at least this big
    ann_ef_search: int = 256  # up to EF_SCALE_ROWS rows; in proportion above (ef_search)
    snapshot_min_chunks: int = 2000  # smaller ones rebuild from SQLite in < 0.1 s
    # Not settings: sizes a test makes small, to compact or evict with a few rows.
    min_tail_rows: int = _MIN_TAIL_ROWS
    cache_bytes: int = _CACHE_BYTES


def ef_search(options: IndexOptions, rows: int) -> int:
    """The efSearch of a walk over ``rows``: a graph's recall at a fixed efSearch falls as it
    grows (hashing vectors, M 32: 0.97 at 100k and efSearch 256, 0.91 at 1M); growing it in
    proportion kept 0.98 at 1M (efSearch 1,600: ~21 ms a walk; make bench-scale)."""
    return max(options.ann_ef_search, options.ann_ef_search * rows // EF_SCALE_ROWS)


class DerivedIndexes:
    """The derived indexes of one SQLite store's collections, under ``root``."""

    def __init__(self, root: Path, options: IndexOptions) -> None:
        self.root = root
        self.options = options
        self._builds: dict[int, threading.Lock] = {}  # per collection, held while it builds
        self._cache_lock = threading.Lock()  # held only to read or reorder the cache
        self._indexes: OrderedDict[int, CollectionIndex] = OrderedDict()

    def current(self, db: sqlite3.Connection, cid: int) -> CollectionIndex:
        """The index of collection ``cid`` at its committed version (or a newer one, which
        another thread read meanwhile)."""
        with _reading(db):
            version = _version(db, cid)
            found = self._cached(cid)
            if found is not None and found.version >= version >= 0:
                return found
            with self._building(cid):  # one build per collection; others' searches go on
                found = self._cached(cid)
                if found is not None and found.version >= version >= 0:
                    return found  # built by the thread this one waited for
                index = self._brought_up(db, cid, version, found)
                self._keep(cid, index)
                return index

    def refresh(self, db: sqlite3.Connection, cid: int) -> int:
        """Bring the index current (compacting and writing a snapshot when due); returns the
        version up to which the change log may be pruned (0: none), which the caller does
        in a write of its own (a search never takes the write lock)."""
        index = self.current(db, cid)
        if not self._snapshot_wanted(index):
            return index.version  # nothing on disk: a new process rebuilds from SQLite
        # The entries after the snapshot stay: a new process catches up from them.
        found = snapshot.latest(self._folder(cid), index.version)
        return 0 if found is None else found.version

    def _building(self, cid: int) -> threading.Lock:
        with self._cache_lock:
            return self._builds.setdefault(cid, threading.Lock())

    def forget(self, cid: int) -> None:
        """Drop the collection's index from memory and disk (the collection is gone)."""
        with self._cache_lock:
            self._indexes.pop(cid, None)
        snapshot.remove_all(self._folder(cid))

    def problems(self, db: sqlite3.Connection, cid: int) -> list[str]:
        """What is wrong with the collection's derived index: snapshot files whose size or
        CRC changed, and rows it holds or misses against SQLite once caught up."""
        found = [
            f"snapshot file {name} is damaged"
            for name in snapshot.checksum_errors(self._folder(cid))
        ]
        with _reading(db):
            held = self.current(db, cid).row_ids()
            rows = {
                int(r[0])
                for r in db.execute(
                    "SELECT k.id FROM chunks k JOIN documents d ON d.id = k.document_id "
                    "WHERE k.collection_id = ?",
                    (cid,),
                )
            }
        found += [f"row {i} is missing from the search index" for i in sorted(rows - held)[:20]]
        found += [
            f"row {i} is in the search index but not in the store" for i in sorted(held - rows)[:20]
        ]
        return found

    # -- catching up -----------------------------------------------------------------

    def _brought_up(
        self, db: sqlite3.Connection, cid: int, version: int, index: CollectionIndex | None
    ) -> CollectionIndex:
        floor = changes.floor(db, cid)
        if index is not None and floor <= index.version <= version:
            caught = self._caught_up(db, cid, index, version)
        else:
            caught = self._opened(db, cid, version, floor)
        if caught is None or self._due(caught):
            return self._rebuild(db, cid, version)
        if len(caught.segments) > _MAX_SEGMENTS:
            return self._tail_merged(db, cid, caught)
        return caught

    def _opened(
        self, db: sqlite3.Connection, cid: int, version: int, floor: int
    ) -> CollectionIndex | None:
        """The newest usable snapshot caught up to ``version``; None when there is none."""
        found = snapshot.latest(self._folder(cid), version)
        if found is not None and found.version >= floor:
            dim = int(found.segment.vectors.shape[1]) if len(found.segment) else _dim(db, cid)
            whole = (np.ones(len(found.segment), dtype=bool),)
            index = CollectionIndex(found.version, dim, (found.segment,), whole, found.ann)
            caught = self._caught_up(db, cid, index, version)
            if caught is not None and _fingerprint(caught) == changes.fingerprint(db, cid):
                return caught
            if caught is not None:
                log.warning("index snapshot %s does not match the store: rebuilding it", found.path)
                # Else it stays in the way of the rebuilt one's (same version) for good.
                snapshot.remove_all(found.path)
        return None

    def _caught_up(
        self, db: sqlite3.Connection, cid: int, index: CollectionIndex, version: int
    ) -> CollectionIndex | None:
        """``index`` with the writes after its version up to ``version`` applied; None when
        they are so many that a rebuild is cheaper."""
        if index.version == version:
            return index
        changed = sorted(changes.changed_rows(db, cid, index.version, version))
        if len(changed) > max(self.options.min_tail_rows, _TAIL_SHARE * len(index.segments[0])):
            return None
        wanted = np.asarray(changed, dtype=np.int64)
        live = []
        for segment, mask in zip(index.segments, index.live, strict=True):
            live.append(mask & ~np.isin(segment.ids, wanted))
        added = build_segment(changes.rows(db, cid, changed), len(changed), index.dim)
        return CollectionIndex(
            version,
            index.dim,
            (*index.segments, added),
            (*live, np.ones(len(added), dtype=bool)),
            index.ann,
        )

    def _rebuild(self, db: sqlite3.Connection, cid: int, version: int) -> CollectionIndex:
        """One segment from SQLite (inside the caller's read), an ANN graph when big, and
        a snapshot when worth one."""
        (count,) = db.execute(
            "SELECT count(*) FROM chunks WHERE collection_id = ?", (cid,)
        ).fetchone()
        segment = build_segment(changes.rows(db, cid), int(count), _dim(db, cid))
        ann = Ann.build(segment.vectors) if len(segment) >= self.options.ann_min_chunks else None
        index = CollectionIndex(
            version, _dim(db, cid), (segment,), (np.ones(len(segment), dtype=bool),), ann
        )
        if self._snapshot_wanted(index):
            self._save(cid, index, segment, ann)
        return index

    def _due(self, index: CollectionIndex) -> bool:
        """Whether the index should be compacted into one segment now."""
        base = len(index.segments[0])
        limit = max(self.options.min_tail_rows, _TAIL_SHARE * base)
        tail = sum(len(s) for s in index.segments[1:])
        dead = sum(len(m) - int(m.sum()) for m in index.live)
        wants_ann = index.ann is None and index.rows >= self.options.ann_min_chunks
        # Dropped a little below the threshold, so a collection near it is not rebuilt at
        # every write (and at once when the threshold is raised).
        drops_ann = index.ann is not None and index.rows < _ANN_KEPT * self.options.ann_min_chunks
        return tail > limit or dead > limit or wants_ann or drops_ann

    def _tail_merged(
        self, db: sqlite3.Connection, cid: int, index: CollectionIndex
    ) -> CollectionIndex:
        """``index`` with its small segments (all but the base) read again from SQLite as
        one: cheap, and the base keeps its ANN graph (a rebuild of 100k chunks' costs
        minutes)."""
        ids = sorted(
            {
                int(i)
                for s, m in zip(index.segments[1:], index.live[1:], strict=True)
                for i in s.ids[m]
            }
        )
        merged = build_segment(changes.rows(db, cid, ids), len(ids), index.dim)
        live = (index.live[0], np.ones(len(merged), dtype=bool))
        return CollectionIndex(
            index.version, index.dim, (index.segments[0], merged), live, index.ann
        )

    # -- snapshots -------------------------------------------------------------------

    def _snapshot_wanted(self, index: CollectionIndex) -> bool:
        return index.rows >= self.options.snapshot_min_chunks

    def _save(self, cid: int, index: CollectionIndex, segment: Segment, ann: Ann | None) -> None:
        try:
            snapshot.write(self._folder(cid), index.version, segment, ann)
        # faiss reports a failed write (a full disk) as RuntimeError; a read-only data dir
        # is an OSError. Either way searches go on: each process rebuilds in memory.
        except (OSError, RuntimeError) as exc:
            log.warning(
                "cannot write the index snapshot under %s (%s): searches still work, "
                "but each process rebuilds the index",
                self.root,
                exc,
            )

    def _folder(self, cid: int) -> Path:
        return self.root / str(int(cid))

    def _cached(self, cid: int) -> CollectionIndex | None:
        with self._cache_lock:
            found = self._indexes.get(cid)
            if found is not None:
                self._indexes.move_to_end(cid)
            return found

    def _keep(self, cid: int, index: CollectionIndex) -> None:
        with self._cache_lock:
            self._indexes[cid] = index
            self._indexes.move_to_end(cid)
            self._evict()

    def _evict(self) -> None:
        while len(self._indexes) > 1 and sum(i.nbytes for i in self._indexes.values()) > (
            self.options.cache_bytes
        ):
            self._indexes.popitem(last=False)


def _fingerprint(index: CollectionIndex) -> tuple[int, int, int]:
    """What :func:`changes.fingerprint` says of SQLite, of the index's live rows."""
    parts = [(s.ids[m], s.digests[m]) for s, m in zip(index.segments, index.live, strict=True)]
    return (
        sum(len(i) for i, _ in parts),
        sum(int(i.sum()) for i, _ in parts),
        sum(int((i * d.astype(np.int64)).sum()) for i, d in parts),
    )


def _version(db: sqlite3.Connection, cid: int) -> int:
    row = db.execute("SELECT version FROM collections WHERE id = ?", (cid,)).fetchone()
    return -1 if row is None else int(row[0])


def _dim(db: sqlite3.Connection, cid: int) -> int:
    row = db.execute("SELECT dim FROM collections WHERE id = ?", (cid,)).fetchone()
    return 0 if row is None else int(row[0])


@contextmanager
def _reading(db: sqlite3.Connection) -> Iterator[None]:
    """One read snapshot for the version, the log and the rows (unless the caller is
    inside a transaction already, whose snapshot it then shares)."""
    if db.in_transaction:
        yield
        return
    db.execute("BEGIN")
    try:
        yield
    finally:
        if db.in_transaction:
            db.execute("COMMIT")
