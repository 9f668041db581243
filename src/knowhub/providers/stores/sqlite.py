"""The embedded store: one SQLite file is the single source of truth.

Documents, chunks, metadata, vectors (float32 blobs) and the lexical index
(one FTS5 table per collection, over pre-tokenized text) live in one file, so
replacing a document is one transaction and a crash can never leave the
vector and keyword sides disagreeing. Searches read a derived index per collection
(:mod:`.derived`: filter columns, BM25 postings, vectors, an HNSW graph when big),
rebuilt from these tables and kept current through the change log every write adds to.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import StoreError
from knowhub.models import Chunk, DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import (
    CollectionInfo,
    DocumentWrite,
    FaqEntry,
    Orphan,
    Store,
    StoredChunk,
    check_embedder,
    checked_meta_key,
    checked_vectors,
    moved_paths,
)
from knowhub.providers.stores.derived import changes
from knowhub.providers.stores.derived.live import DerivedIndexes, IndexOptions, ef_search
from knowhub.providers.stores.disk import disk_stop, disk_trouble
from knowhub.providers.stores.schema import (
    ADDED_NAMES,
    ADDITIONS,
    SCHEMA,
    SCHEMA_VERSION,
    fts_table,
)
from knowhub.providers.stores.sqlite_connections import Connections
from knowhub.providers.stores.sqlite_rows import (
    DOC_COLUMNS,
    HIT_SELECT,
    INSERT_CHUNKS,
    INSERT_DOCUMENT,
    NEXT_COLLECTION_ID,
    ORPHAN_CHUNKS,
    ORPHAN_FTS,
    chunk_of,
    chunk_values,
    document_values,
    each_in_savepoint,
    hit_of,
    integrity_counts,
    record_of,
    vector_of,
)
from knowhub.providers.stores.sqlite_state import SQLiteState

__all__ = ["DB_NAME", "SQLiteStore", "create"]

DB_NAME = "knowhub.sqlite3"

log = logging.getLogger("knowhub.store")

_COLLECTION_ROW = "SELECT id, embedder, dim FROM collections WHERE name = ?"


class SQLiteStore:
    """Transactional store of collections, documents, chunks, vectors and FTS5."""

    def __init__(self, path: Path, options: IndexOptions | None = None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._connections = Connections(path)
        try:
            self._migrate()
        except StoreError:  # a schema this knowhub cannot read
            self._connections.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._connections.close()
            raise _unopenable(path, exc) from exc
        self._lock = threading.RLock()
        # Beside the database file: ``knowhub.sqlite3.index/<collection id>/``.
        self._derived = DerivedIndexes(
            path.with_name(path.name + ".index"), options or IndexOptions()
        )

    @property
    def _db(self) -> sqlite3.Connection:
        """The calling thread's connection (see :mod:`.sqlite_connections` for why)."""
        return self._connections.get()

    def close(self) -> None:
        self._connections.close()

    def server_state(self) -> SQLiteState:
        return SQLiteState(self.transaction, self._connections.get)

    # -- schema and transactions -------------------------------------------------

    def _migrate(self) -> None:
        # Checked inside the write lock so two processes opening a new store don't race.
        with self.transaction() as db:
            exists = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
            ).fetchone()
            if exists is None:
                for statement in SCHEMA:
                    db.execute(statement)
                db.execute(
                    "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
                )
            (version,) = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema {version}, this knowhub expects {SCHEMA_VERSION}: "
                "re-ingest into a new --data-dir"
            )
        marks = ",".join("?" * len(ADDED_NAMES))
        (present,) = self._db.execute(
            f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})", ADDED_NAMES
        ).fetchone()
        if present < len(ADDED_NAMES):  # the write lock is taken only when one is missing
            with self.transaction() as db:
                for statement in ADDITIONS:
                    db.execute(statement)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write on this thread's connection: ``BEGIN IMMEDIATE`` … ``COMMIT``
        (rollback on any error); other threads' reads see it once it commits."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (disk full, I/O)
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # -- collections -------------------------------------------------------------

    def ensure_collection(self, name: str, embedder: str, dim: int) -> int:
        """Return the collection's id, creating it; refuse a different embedder."""
        row = self._db.execute(_COLLECTION_ROW, (name,)).fetchone()
        if row is None:
            with self.transaction() as db:
                # Again under the write lock: another process (a replica indexing the same
                # folder) may have created it since, and the name is unique.
                row = db.execute(_COLLECTION_ROW, (name,)).fetchone()
                if row is None:
                    cur = db.execute(
                        "INSERT INTO collections(id, name, embedder, dim, created_at) "
                        f"VALUES ({NEXT_COLLECTION_ID}, ?, ?, ?, "
                        "strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
                        (name, embedder, dim),
                    )
                    cid = int(cur.lastrowid or 0)
                    db.execute(f"CREATE VIRTUAL TABLE {fts_table(cid)} USING fts5(tokens)")
                    return cid
        check_embedder(name, (row[1], row[2]), embedder, dim)
        return int(row[0])

    def embedder_of(self, cid: int) -> tuple[str, int]:
        """The (embedder id, dimension) the collection was built with."""
        row = self._db.execute("SELECT embedder, dim FROM collections WHERE id = ?", (cid,))
        name, dim = row.fetchone()
        return str(name), int(dim)

    def collection_id(self, name: str) -> int | None:
        row = self._db.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def collections(self) -> list[CollectionInfo]:
        rows = self._db.execute(
            "SELECT c.name, c.embedder, c.dim, c.version, c.created_at, "
            "(SELECT count(*) FROM documents d WHERE d.collection_id = c.id), "
            "(SELECT count(*) FROM chunks k WHERE k.collection_id = c.id), c.id "
            "FROM collections c ORDER BY c.name"
        ).fetchall()
        return [
            CollectionInfo(r[0], r[1], r[2], r[3], r[5], r[6], r[4], self._lexical_rows(r[7]))
            for r in rows
        ]

    def _lexical_rows(self, cid: int) -> int:
        table = fts_table(cid)
        exists = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        if exists is None:
            return 0
        return int(self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def version(self, cid: int) -> int:
        (version,) = self._db.execute(
            "SELECT version FROM collections WHERE id = ?", (cid,)
        ).fetchone()
        return int(version)

    def drop_collection(self, cid: int) -> None:
        """Delete the collection, its rows and its FTS table in one transaction."""
        with self._lock, self.transaction() as db:
            self._drop(db, cid)

    def _drop(self, db: sqlite3.Connection, cid: int) -> bool:
        """:meth:`drop_collection` inside the caller's transaction; False if unknown."""
        if db.execute("SELECT 1 FROM collections WHERE id = ?", (cid,)).fetchone() is None:
            return False
        db.execute(f"DROP TABLE IF EXISTS {fts_table(cid)}")
        changes.drop_changes(db, cid)
        for table in ("chunks", "documents", "faq"):
            db.execute(f"DELETE FROM {table} WHERE collection_id = ?", (cid,))
        db.execute("DELETE FROM collections WHERE id = ?", (cid,))
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('dropped_collection_id', ?) "
            "ON CONFLICT(key) DO UPDATE SET "
            "value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
            (cid,),
        )
        self._derived.forget(cid)
        return True

    # -- metadata --------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute(
            "SELECT value FROM meta WHERE key = ?", (checked_meta_key(key),)
        ).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str | None, expected: str | None) -> bool:
        """Compare-and-set ``key`` inside one write transaction (other writers wait)."""
        key = checked_meta_key(key)
        with self._lock, self.transaction() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if (None if row is None else row[0]) != expected:
                return False
            if value is None:
                db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                db.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
        return True

    # -- documents ---------------------------------------------------------------

    def record(self, cid: int, path: str) -> DocumentRecord | None:
        row = self._db.execute(
            f"SELECT {DOC_COLUMNS} FROM documents d JOIN collections c ON c.id = d.collection_id "
            "WHERE d.collection_id = ? AND d.path = ?",
            (cid, path),
        ).fetchone()
        return None if row is None else record_of(row)

    def records(self, cid: int) -> list[DocumentRecord]:
        rows = self._db.execute(
            f"SELECT {DOC_COLUMNS} FROM documents d JOIN collections c ON c.id = d.collection_id "
            "WHERE d.collection_id = ? ORDER BY d.source",
            (cid,),
        ).fetchall()
        return [record_of(r) for r in rows]

    def find_records(self, cid: int, path_or_source: str) -> list[DocumentRecord]:
        """Documents whose path or source equals the key."""
        rows = self._db.execute(
            f"SELECT {DOC_COLUMNS} FROM documents d JOIN collections c ON c.id = d.collection_id "
            "WHERE d.collection_id = ? AND (d.path = ? OR d.source = ?) ORDER BY d.source",
            (cid, path_or_source, path_or_source),
        ).fetchall()
        return [record_of(r) for r in rows]

    def find_by_hash_prefix(self, cid: int, prefix: str) -> list[DocumentRecord]:
        """Documents whose doc_hash starts with ``prefix``: substr() equality, not LIKE
        (whose ``_`` and ``%`` made ``________`` match every document)."""
        if not prefix:
            return []
        rows = self._db.execute(
            f"SELECT {DOC_COLUMNS} FROM documents d JOIN collections c ON c.id = d.collection_id "
            "WHERE d.collection_id = ?1 AND substr(d.doc_hash, 1, length(?2)) = ?2 "
            "ORDER BY d.source",
            (cid, prefix),
        ).fetchall()
        return [record_of(r) for r in rows]

    def touch(self, cid: int, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size/mtime for a file whose content hash did not change."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET size = ?, mtime_ns = ? WHERE collection_id = ? AND path = ?",
                (size, mtime_ns, cid, path),
            )

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
        """Swap a document's old chunks (and, on a move, those at ``previous``) for new ones."""
        write = DocumentWrite(record, chunks, vectors, tokens, cache_keys, previous)
        if (error := self.replace_documents(cid, [write])[0]) is not None:
            raise error

    def replace_documents(
        self, cid: int, writes: Sequence[DocumentWrite]
    ) -> list[Exception | None]:
        """Several writes in one commit (~1 ms, as much as a small document's rows), each
        in a savepoint of its own."""
        embedder, dim = self.embedder_of(cid)
        with self._lock, self.transaction() as db:
            return [
                each_in_savepoint(db, partial(self._write, db, cid, w, embedder, dim))
                for w in writes
            ]

    def _write(self, db: sqlite3.Connection, cid: int, w: DocumentWrite, *built: Any) -> None:
        vectors = checked_vectors(w.record, w.chunks, w.vectors, w.tokens, w.cache_keys, *built)
        for path in moved_paths(w.record, w.previous):
            self._delete(db, cid, path)
        self._insert(db, cid, w.record, w.chunks, vectors, w.tokens, w.cache_keys, None)

    def _insert(
        self,
        db: sqlite3.Connection,
        cid: int,
        record: DocumentRecord,
        chunks: Sequence[Chunk],
        vectors: Vectors,
        tokens: Sequence[str],
        cache_keys: Sequence[str],
        ids: Sequence[int] | None,
    ) -> None:
        """Insert a document, its chunks (with row ``ids`` when given, else fresh ones) and
        their FTS rows, and bump the collection's version; the caller holds the transaction."""
        fts = fts_table(cid)
        cur = db.execute(INSERT_DOCUMENT, document_values(cid, record, len(chunks)))
        doc_id = cur.lastrowid
        blobs = [np.asarray(v, dtype=np.float32).tobytes() for v in vectors]
        if ids is None:  # the ids SQLite would give one by one (the transaction holds the lock)
            (top,) = db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
            ids = range(top + 1, top + 1 + len(chunks))
        db.executemany(INSERT_CHUNKS, chunk_values(ids, doc_id, cid, chunks, blobs))
        db.executemany(
            f"INSERT INTO {fts}(rowid, tokens) VALUES (?, ?)", zip(ids, tokens, strict=True)
        )
        changes.log_added(db, cid, ids)
        db.executemany(
            "INSERT OR IGNORE INTO embedding_cache(key, vector) VALUES (?, ?)",
            zip(cache_keys, blobs, strict=True),
        )
        db.execute("UPDATE collections SET version = version + 1 WHERE id = ?", (cid,))

    def remove_document(self, cid: int, path: str) -> bool:
        """Delete a document and its chunks; False if it was not there."""
        with self._lock, self.transaction() as db:
            removed = self._delete(db, cid, path)
            if removed:
                db.execute("UPDATE collections SET version = version + 1 WHERE id = ?", (cid,))
        return removed

    def stored_chunks(self, cid: int, path: str) -> list[StoredChunk]:
        """The document's chunks with their vectors and FTS tokens, in one consistent read."""
        rows = self._db.execute(
            "SELECT k.chunk_id, d.doc_hash, k.idx, k.text, k.section_path, k.page, "
            "k.line_start, k.line_end, k.char_start, k.char_end, k.language, k.metadata, "
            f"k.vector, f.tokens FROM documents d JOIN chunks k ON k.document_id = d.id "
            f"LEFT JOIN {fts_table(cid)} f ON f.rowid = k.id "
            "WHERE d.collection_id = ? AND d.path = ? ORDER BY k.idx, k.id",
            (cid, path),
        ).fetchall()
        return [StoredChunk(chunk_of(r), vector_of(r[12]), r[13]) for r in rows]

    def _delete(self, db: sqlite3.Connection, cid: int, path: str) -> bool:
        row = db.execute(
            "SELECT id FROM documents WHERE collection_id = ? AND path = ?", (cid, path)
        ).fetchone()
        if row is None:
            return False
        chunk_ids = [
            r[0] for r in db.execute("SELECT id FROM chunks WHERE document_id = ?", (row[0],))
        ]
        changes.log_removed(db, cid, chunk_ids)
        db.execute(
            f"DELETE FROM {fts_table(cid)} WHERE rowid IN "
            "(SELECT id FROM chunks WHERE document_id = ?)",
            (row[0],),
        )
        db.execute("DELETE FROM chunks WHERE document_id = ?", (row[0],))
        db.execute("DELETE FROM documents WHERE id = ?", (row[0],))
        return True

    # -- embedding cache ---------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, Vectors]:
        """Vectors already computed for these cache keys (chunk-content hashes)."""
        found: dict[str, Vectors] = {}
        for start in range(0, len(keys), 500):
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            for key, blob in self._db.execute(
                f"SELECT key, vector FROM embedding_cache WHERE key IN ({marks})", part
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def cache_vectors(self, keys: Sequence[str], vectors: Vectors) -> None:
        """Keep vectors no document holds yet under their cache keys (a stopped ingest's)."""
        if not len(keys):
            return
        blobs = [np.asarray(v, dtype=np.float32).tobytes() for v in vectors]
        with self._lock, self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO embedding_cache(key, vector) VALUES (?, ?)",
                zip(keys, blobs, strict=True),
            )

    # -- search ------------------------------------------------------------------

    def lexical_search(
        self, cid: int, tokens: Sequence[str], limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """BM25 as FTS5 ranks it, from the derived postings: (chunk row id, score ↑ better)."""
        if not tokens:
            return []
        index = self._derived.current(self._db, cid)
        return index.lexical(tokens, limit, index.masks(filters))

    def dense_search(
        self, cid: int, query: Vectors, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """Cosine similarity, exact (HNSW with exact re-scoring for big collections)."""
        index = self._derived.current(self._db, cid)
        ef = ef_search(self._derived.options, index.rows)
        return index.dense(query, limit, index.masks(filters), ef)

    def refresh_index(self, cid: int) -> None:
        """Bring the collection's derived index current (a snapshot on disk when due) and
        prune the change log it no longer needs: run at the end of an ingest."""
        upto = self._derived.refresh(self._db, cid)
        if upto > 0:
            try:
                with self._lock, self.transaction() as db:
                    changes.prune(db, cid, upto)
            except sqlite3.OperationalError as exc:  # read-only, or locked past the timeout
                log.warning("could not prune the change log of collection %d: %s", cid, exc)

    def hits(self, ids: Sequence[int]) -> dict[int, Hit]:
        """Full rows for chunk row ids (score 0; the caller sets scores)."""
        out: dict[int, Hit] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"{HIT_SELECT} WHERE k.id IN ({marks})", part):
                out[int(row[0])] = hit_of(row)
        return out

    def chunk_sources(self, cid: int) -> dict[int, str]:
        """Chunk row id → document source, for every chunk of a collection (evaluation)."""
        rows = self._db.execute(
            "SELECT k.id, d.source FROM chunks k JOIN documents d ON d.id = k.document_id "
            "WHERE k.collection_id = ?",
            (cid,),
        )
        return {int(rowid): str(source) for rowid, source in rows}

    def chunks_by_id(self, chunk_id: str) -> list[Hit]:
        """Chunks with this chunk id (one, unless identical files sit at two paths)."""
        rows = self._db.execute(f"{HIT_SELECT} WHERE k.chunk_id = ?", (chunk_id,)).fetchall()
        return [hit_of(r) for r in rows]

    # -- FAQ -----------------------------------------------------------------------

    def replace_faq(
        self, cid: int, source: str, entries: Sequence[tuple[str, str, int]], vectors: Vectors
    ) -> None:
        """Make ``entries`` (question, answer, line) the FAQ of ``source``, atomically."""
        blobs = [np.asarray(v, dtype=np.float32).tobytes() for v in vectors]
        with self._lock, self.transaction() as db:
            db.execute("DELETE FROM faq WHERE collection_id = ? AND source = ?", (cid, source))
            db.executemany(
                "INSERT INTO faq(collection_id, source, question, answer, line, vector) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (cid, source, q, a, line, b)
                    for (q, a, line), b in zip(entries, blobs, strict=True)
                ],
            )

    def faq(self, cid: int) -> list[FaqEntry]:
        rows = self._db.execute(
            "SELECT source, question, answer, line, vector FROM faq WHERE collection_id = ? "
            "ORDER BY source, line",
            (cid,),
        ).fetchall()
        return [
            FaqEntry(r[0], r[1], r[2], r[3], np.frombuffer(r[4], dtype=np.float32)) for r in rows
        ]

    def remove_faq(self, cid: int, source: str) -> int:
        """Delete the FAQ entries of ``source``; how many there were."""
        with self._lock, self.transaction() as db:
            cur = db.execute(
                "DELETE FROM faq WHERE collection_id = ? AND source = ?", (cid, source)
            )
            return int(cur.rowcount)

    def _index_problems(self, cid: int) -> list[str]:
        """What is wrong with the derived search index (subclasses that search elsewhere
        and never read it return none)."""
        return self._derived.problems(self._db, cid)

    def integrity_report(self) -> dict[str, int]:
        """Counts that must all be zero in a consistent store (used by tests and doctor)."""
        return integrity_counts(self._db)

    def orphans(self, cid: int) -> list[Orphan]:
        """Chunks whose document row is gone, FTS rows whose chunk row is gone, and damage
        to the derived search index (a snapshot file, rows it holds or lacks)."""
        chunks = self._db.execute(ORPHAN_CHUNKS.format(what="k.chunk_id"), (cid,)).fetchall()
        lexical = self._db.execute(ORPHAN_FTS.format(fts=fts_table(cid)), (cid,)).fetchall()
        return (
            [Orphan("chunk", str(r[0])) for r in chunks]
            + [Orphan("lexical", f"row {r[0]}") for r in lexical]
            + [Orphan("derived", problem) for problem in self._index_problems(cid)]
        )

    def remove_orphans(self, cid: int) -> int:
        """Delete orphan chunks (with their FTS rows) and orphan FTS rows in one transaction."""
        fts = fts_table(cid)
        with self._lock, self.transaction() as db:
            ids = [r[0] for r in db.execute(ORPHAN_CHUNKS.format(what="k.id"), (cid,))]
            stray = [r[0] for r in db.execute(ORPHAN_FTS.format(fts=fts), (cid,))]
            for rowid in ids:
                db.execute(f"DELETE FROM {fts} WHERE rowid = ?", (rowid,))
                db.execute("DELETE FROM chunks WHERE id = ?", (rowid,))
            for rowid in stray:
                db.execute(f"DELETE FROM {fts} WHERE rowid = ?", (rowid,))
            if ids or stray:
                db.execute("UPDATE collections SET version = version + 1 WHERE id = ?", (cid,))
        damaged = len(self._index_problems(cid))
        if damaged:  # rebuilt from SQLite by the next search, in every process:
            self._derived.forget(cid)
            with self._lock, self.transaction() as db:  # a new version past the log's floor
                db.execute("UPDATE collections SET version = version + 1 WHERE id = ?", (cid,))
                changes.prune(db, cid, self.version(cid))
        return len(ids) + len(stray) + damaged


def create(settings: Settings) -> Store:
    # Typed as the contract, so mypy proves SQLiteStore keeps every method of it.
    sqlite = settings.store.sqlite
    options = IndexOptions(ann_min_chunks=sqlite.ann_min_chunks, ann_ef_search=sqlite.ann_ef_search)
    return SQLiteStore(Path(settings.data_dir) / DB_NAME, options)


def _unopenable(path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    """Why the store could not be opened, and the fix: a data dir or database this user
    may not write, or a full disk, is not a damaged store (no backup is needed)."""
    user = f"this user (uid {os.getuid()})"
    if not os.access(path.parent, os.W_OK):
        return StoreError(
            f"data dir {path.parent} is not writable by {user} ({exc}): give --data-dir (or "
            "KNOWHUB_DATA_DIR) a folder this user may write, or change its owner or mode"
        )
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        return StoreError(
            f"the store {path} is not writable by {user} ({exc}): change the file's owner or "
            "mode to match the data dir's"
        )
    trouble = disk_trouble(exc)
    if trouble is not None:
        return StoreError(disk_stop(f"the data dir {path.parent}", trouble, exc))
    return StoreError(
        f"cannot open the store {path}: {exc}; restore it from a backup or move it aside "
        "and re-ingest"
    )
