"""A SQLite catalog with an external search index (the Milvus and Chroma stores).

The catalog is the SQLite store itself: documents, chunks, citation spans, FAQ, the
embedding cache and a copy of every vector (so that export, verify and a rebuilt index
never read back from the index). The index holds each chunk's vector (and its lexical
tokens, when it has a lexical leg) under the chunk's catalog row id, and searches.

The catalog decides what exists. Search results are kept only when their row id is a live
chunk in the catalog, so rows the index holds but the catalog does not (written before a
document's commit, or not yet deleted after it) are invisible. Replacing a document:

1. reserve fresh row ids (never reused) and journal them as ``pending``;
2. write the new rows to the index;
3. commit the catalog: old chunks out, new chunks in, the pending entry gone and the old
   ids journaled as ``delete`` — the one moment readers switch versions;
4. delete the old rows from the index and drop the journal entry.

A process killed anywhere leaves journal entries whose rows the next write deletes from the
index (the journal is replayed under the writers' file lock before every write).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from knowhub.errors import StoreError
from knowhub.models import Chunk, DocumentRecord, Filters
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import (
    DocumentWrite,
    Orphan,
    StoredChunk,
    checked_vectors,
    moved_paths,
    one_by_one,
)
from knowhub.providers.stores.derived.changes import prune as prune_changes
from knowhub.providers.stores.derived.live import IndexOptions
from knowhub.providers.stores.indexed.index import (
    IndexRow,
    VectorIndex,
    filter_groups,
    filter_terms,
)
from knowhub.providers.stores.sqlite import SQLiteStore

__all__ = ["IndexedStore"]

log = logging.getLogger("knowhub.store")

# A search rereads while writes commit between its index search and its catalog check;
# after this many collisions in a row it takes the writers' lock for one more try.
_TORN_READ_RETRIES = 3

_JOURNAL = """CREATE TABLE IF NOT EXISTS index_journal(
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL,
    op TEXT NOT NULL,
    n INTEGER NOT NULL,
    ids TEXT NOT NULL)"""


class IndexedStore(SQLiteStore):
    """The SQLite catalog at ``path`` searched through ``index`` (spaces named ``prefix…``)."""

    def __init__(self, path: Path, index: VectorIndex, prefix: str) -> None:
        # The catalog's derived index serves only the lexical leg of an index without one
        # (Chroma): never an HNSW graph over vectors the index holds already.
        super().__init__(path, IndexOptions(ann_min_chunks=1 << 62))
        self.index = index
        with self.transaction() as db:
            db.execute(_JOURNAL)
            # Names this catalog's spaces, so two catalogs can share one index server.
            db.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_uid', ?)",
                (secrets.token_hex(4),),
            )
            (uid,) = db.execute("SELECT value FROM meta WHERE key = 'index_uid'").fetchone()
        self._space_prefix = f"{prefix}{uid}_"
        self._lock_file = path.with_name(path.name + ".lock")
        self._writer = threading.Lock()
        self._created: set[int] = set()

    def close(self) -> None:
        self.index.close()
        super().close()

    def space(self, cid: int) -> str:
        """The index space (Milvus or Chroma collection) holding collection ``cid``."""
        return f"{self._space_prefix}{cid}"

    # -- writes ----------------------------------------------------------------------

    def ensure_collection(self, name: str, embedder: str, dim: int) -> int:
        cid = super().ensure_collection(name, embedder, dim)
        if cid not in self._created:
            self.index.create(self.space(cid), dim)
            self._created.add(cid)
        return cid

    def drop_collection(self, cid: int) -> None:
        """The catalog's drop, journaled in its transaction, then the index space's (a
        process killed in between leaves the journal entry: the next write drops it)."""
        with self._writing():
            with self._lock, self.transaction() as db:
                entry = self._journal(db, cid, "drop", []) if self._drop(db, cid) else None
            self._created.discard(cid)
            if entry is not None:
                self.index.drop(self.space(cid))
                with self._lock, self.transaction() as db:
                    db.execute("DELETE FROM index_journal WHERE id = ?", (entry,))

    def replace_document(
        self,
        cid: int,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        tokens: Sequence[str],
        cache_keys: Sequence[str],
        previous: str | None = None,
    ) -> None:
        embedder, dim = self.embedder_of(cid)
        vectors = checked_vectors(record, chunks, vectors, tokens, cache_keys, embedder, dim)
        with self._writing():
            with self._lock, self.transaction() as db:
                ids = self._reserve(db, len(chunks))
                pending = self._journal(db, cid, "pending", ids)
            rows = [
                IndexRow(
                    row_id,
                    filter_terms(c.language, record.source, record.format, c.metadata),
                    text_tokens,
                )
                for row_id, c, text_tokens in zip(ids, chunks, tokens, strict=True)
            ]
            if rows:
                self.index.upsert(self.space(cid), rows, vectors)
            with self._lock, self.transaction() as db:
                old = []
                for path in moved_paths(record, previous):  # a move: both records' rows
                    old += _document_chunk_ids(db, cid, path)
                    self._delete(db, cid, path)
                self._insert(db, cid, record, chunks, vectors, tokens, cache_keys, ids)
                db.execute("DELETE FROM index_journal WHERE id = ?", (pending,))
                dead = self._journal(db, cid, "delete", old)
            self._settle(dead, cid, old)

    def replace_documents(
        self, cid: int, writes: Sequence[DocumentWrite]
    ) -> list[Exception | None]:
        """One at a time, not the catalog's group commit: each document's vectors reach
        the index under the journal before its catalog rows commit."""
        return one_by_one(self, cid, writes)

    def remove_document(self, cid: int, path: str) -> bool:
        with self._writing():
            with self._lock, self.transaction() as db:
                old = _document_chunk_ids(db, cid, path)
                removed = self._delete(db, cid, path)
                if removed:
                    db.execute("UPDATE collections SET version = version + 1 WHERE id = ?", (cid,))
                dead = self._journal(db, cid, "delete", old)
            self._settle(dead, cid, old)
        return removed

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One writer at a time across threads and processes, after a journal replay."""
        with self._writers_lock():
            self._replay()
            yield

    @contextmanager
    def _writers_lock(self) -> Iterator[None]:
        """The writers' lock (threads and processes): no write commits while it is held."""
        with self._writer, self._lock_file.open("a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _reserve(self, db: sqlite3.Connection, n: int) -> list[int]:
        # SQLite reuses a freed largest row id; an index row left behind under a reused id
        # would pair an old vector with new text, so ids come from a counter that only grows.
        row = db.execute("SELECT value FROM meta WHERE key = 'next_chunk_id'").fetchone()
        (top,) = db.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()
        start = max(int(row[0]) if row else 1, int(top))
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('next_chunk_id', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(start + n),),
        )
        return list(range(start, start + n))

    def _journal(self, db: sqlite3.Connection, cid: int, op: str, ids: Sequence[int]) -> int:
        cur = db.execute(
            "INSERT INTO index_journal(collection_id, op, n, ids) VALUES (?, ?, ?, ?)",
            (cid, op, len(ids), json.dumps(list(ids))),
        )
        return int(cur.lastrowid or 0)

    def _settle(self, entry: int, cid: int, ids: Sequence[int]) -> None:
        """Delete a journal entry's rows from the index, then the entry."""
        if ids:
            try:
                self.index.delete(self.space(cid), ids)
            except Exception as exc:  # the catalog has committed; the journal keeps the rest
                log.warning(
                    "%s: deleting %d replaced rows failed (%s); the next write retries",
                    self.index.name,
                    len(ids),
                    exc,
                )
                return
        with self._lock, self.transaction() as db:
            db.execute("DELETE FROM index_journal WHERE id = ?", (entry,))

    def _replay(self) -> None:
        """Delete the rows of every journal entry left by an interrupted write."""
        entries = self._db.execute(
            "SELECT id, collection_id, op, ids FROM index_journal ORDER BY id"
        ).fetchall()
        for entry, cid, op, ids in entries:
            log.info("%s: cleaning up after an interrupted write (%s)", self.index.name, entry)
            try:
                if op == "drop":
                    self.index.drop(self.space(int(cid)))
                else:
                    self.index.delete(self.space(int(cid)), json.loads(ids))
            except Exception as exc:
                raise StoreError(
                    f"{self.index.name} is unreachable ({exc}): writes wait for it; check "
                    f"store.{self.index.name} in knowhub.yaml and that the server runs"
                ) from exc
            with self._lock, self.transaction() as db:
                db.execute("DELETE FROM index_journal WHERE id = ?", (entry,))

    # -- search ----------------------------------------------------------------------

    def dense_search(
        self, cid: int, query: Vectors, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        groups = filter_groups(filters)
        return self._consistent(
            cid, limit, lambda n: self.index.dense_search(self.space(cid), query, n, groups)
        )

    def refresh_index(self, cid: int) -> None:
        # The catalog's derived index serves only the lexical leg of an index without one;
        # with one, nothing reads the catalog's change log (verify rebuilds what it checks).
        if not self.index.lexical:
            super().refresh_index(cid)
            return
        with self._lock, self.transaction() as db:
            prune_changes(db, cid, self.version(cid))

    def _index_problems(self, cid: int) -> list[str]:
        return [] if self.index.lexical else super()._index_problems(cid)

    def lexical_search(
        self, cid: int, tokens: Sequence[str], limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        if not self.index.lexical:
            return super().lexical_search(cid, tokens, limit, filters)
        if not tokens:
            return []
        groups = filter_groups(filters)
        return self._consistent(
            cid, limit, lambda n: self.index.lexical_search(self.space(cid), tokens, n, groups)
        )

    def _consistent(
        self, cid: int, limit: int, search: Callable[[int], list[tuple[int, float]]]
    ) -> list[tuple[int, float]]:
        """``search(n)``'s live results, index and catalog read at one catalog version.

        The index search and the live check are two reads: a document replaced between
        them (its new rows written to the index after the search, the catalog committed
        before the check) would show neither version. The version only grows, so when it
        is the same before the search and after the check, no commit came between. Writes
        landing faster than a search runs (an ingest beside a slow index) would keep it
        retrying, so it finally searches holding the writers' lock, between two writes."""
        for _ in range(_TORN_READ_RETRIES):
            version = self._version_or_none(cid)
            found = search(limit + self._in_flight(cid))
            live = self._live(cid, found)
            if self._version_or_none(cid) == version:
                return live[:limit]
        with self._writers_lock():
            return self._live(cid, search(limit + self._in_flight(cid)))[:limit]

    def _version_or_none(self, cid: int) -> int | None:
        """The collection's version; None once it is dropped (searches then find nothing)."""
        row = self._db.execute("SELECT version FROM collections WHERE id = ?", (cid,)).fetchone()
        return None if row is None else int(row[0])

    def _in_flight(self, cid: int) -> int:
        """Rows the index may hold that the catalog does not: searches fetch this many more.

        (A write journaled after this count can still crowd a result out of one search; it
        never shows a wrong one.)"""
        (n,) = self._db.execute(
            "SELECT coalesce(sum(n), 0) FROM index_journal WHERE collection_id = ?", (cid,)
        ).fetchone()
        return int(n)

    def _live(self, cid: int, found: list[tuple[int, float]]) -> list[tuple[int, float]]:
        """``found`` without the rows the catalog does not hold, order kept."""
        live: set[int] = set()
        ids = [row_id for row_id, _ in found]
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            live.update(
                int(r[0])
                for r in self._db.execute(
                    f"SELECT id FROM chunks WHERE collection_id = ? AND id IN ({marks})",
                    [cid, *part],
                )
            )
        return [(row_id, score) for row_id, score in found if row_id in live]

    # -- health ----------------------------------------------------------------------

    def stored_chunks(self, cid: int, path: str) -> list[StoredChunk]:
        """The catalog's chunks, each without its vector (and, for a lexical index, its
        tokens) when the index lacks its row."""
        stored = super().stored_chunks(cid, path)
        ids = _document_chunk_ids(self._db, cid, path)
        if len(ids) != len(stored):  # a write landed between the two reads: read again
            return self.stored_chunks(cid, path)
        present = self.index.present(self.space(cid), ids)
        return [
            s
            if row_id in present
            else dataclasses.replace(
                s, vector=None, tokens=None if self.index.lexical else s.tokens
            )
            for row_id, s in zip(ids, stored, strict=True)
        ]

    def orphans(self, cid: int) -> list[Orphan]:
        """The catalog's orphans, and index rows no live chunk or journal entry explains."""
        extra = self._index_extra(cid)
        return super().orphans(cid) + [
            Orphan("vector", f"{self.index.name} row {row_id}") for row_id in extra
        ]

    def remove_orphans(self, cid: int) -> int:
        with self._writing():
            removed = super().remove_orphans(cid)
            extra = self._index_extra(cid)
            if extra:
                self.index.delete(self.space(cid), extra)
        return removed + len(extra)

    def integrity_report(self) -> dict[str, int]:
        report = super().integrity_report()
        mismatch = 0
        for (cid,) in self._db.execute("SELECT id FROM collections").fetchall():
            catalog = self._catalog_ids(int(cid))
            held = self.index.ids(self.space(int(cid))) - self._journaled(int(cid))
            mismatch += len(catalog ^ held)
        report["index_mismatch"] = mismatch
        return report

    def _index_extra(self, cid: int) -> list[int]:
        held = self.index.ids(self.space(cid))
        return sorted(held - self._catalog_ids(cid) - self._journaled(cid))

    def _catalog_ids(self, cid: int) -> set[int]:
        rows = self._db.execute("SELECT id FROM chunks WHERE collection_id = ?", (cid,))
        return {int(r[0]) for r in rows}

    def _journaled(self, cid: int) -> set[int]:
        rows = self._db.execute("SELECT ids FROM index_journal WHERE collection_id = ?", (cid,))
        return {int(i) for (ids,) in rows for i in json.loads(ids)}


def _document_chunk_ids(db: sqlite3.Connection, cid: int, path: str) -> list[int]:
    """Row ids of a document's chunks, in index order (as ``stored_chunks`` lists them)."""
    rows = db.execute(
        "SELECT k.id FROM documents d JOIN chunks k ON k.document_id = d.id "
        "WHERE d.collection_id = ? AND d.path = ? ORDER BY k.idx, k.id",
        (cid, path),
    )
    return [int(r[0]) for r in rows]
