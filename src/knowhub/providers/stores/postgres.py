"""The PostgreSQL store: the same contract as SQLite, on a server with pgvector.

Switched on with ``store: {provider: postgres, postgres: {url_env: KNOWHUB_PG_URL}}``.
Documents, chunks, vectors and the lexical index share rows, so replacing a document is
one transaction and every search is one statement (one MVCC snapshot): readers see the
old version or the new one, never a mix. Row ids come from an identity sequence and are
never reused, so a stale id resolves to nothing rather than to another chunk.

Lexical search is BM25 computed the way SQLite FTS5's ``bm25()`` does (k1 = 1.2,
b = 0.75, the same idf floor) over a tsvector of *our* tokens, so both backends rank
alike; PostgreSQL's ``ts_rank`` has no idf and would rank differently. Dense search is
exact (a scan ordered by cosine distance) up to :data:`EXACT_SEARCH_MAX_CHUNKS` chunks
and uses the collection's HNSW index beyond that.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from knowhub.config import Settings, secret_unset
from knowhub.errors import CollectionNotFound, StoreError
from knowhub.models import Chunk, DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import (
    CollectionInfo,
    FaqEntry,
    Orphan,
    Store,
    StoredChunk,
    check_embedder,
    checked_meta_key,
    checked_vectors,
    moved_paths,
)
from knowhub.providers.stores.pg_rows import (
    DOC_SELECT,
    HIT_SELECT,
    INSERT_CACHE,
    INSERT_CHUNKS,
    INSERT_DOCUMENT,
    ORPHAN_CHUNKS,
    array_of,
    chunk_of,
    chunk_values,
    document_values,
    hit_of,
    record_of,
)
from knowhub.providers.stores.pg_schema import HNSW_MAX_DIM, MIGRATION_LOCK, hnsw_index, migrate
from knowhub.providers.stores.pg_search import dense_statement, lexical_statement
from knowhub.providers.stores.pg_state import PgState

__all__ = ["EXACT_SEARCH_MAX_CHUNKS", "PostgresStore", "create", "display_url"]

# Up to this many chunks an exact scan costs tens of milliseconds (less than embedding
# the query) and returns the true top k, as SQLite does; beyond it HNSW's approximate
# recall is the price of speed.
EXACT_SEARCH_MAX_CHUNKS = 20_000
# FTS5's bm25() constants, so that scores and order match the SQLite store.
_K1 = 1.2
_B = 0.75
_POOL_SIZE = 8
_CONNECT_TIMEOUT_S = 10


def display_url(url: str) -> str:
    """``url`` without its password, for error messages and logs."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparsable PostgreSQL URL>"
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}"


class PostgresStore:
    """Transactional store of collections, documents, chunks, vectors and BM25 terms."""

    def __init__(self, url: str, *, exact_search_max_chunks: int = EXACT_SEARCH_MAX_CHUNKS) -> None:
        """``exact_search_max_chunks``: collections up to this size are searched exactly,
        larger ones through their HNSW index (the default; a test makes every collection
        large)."""
        self.url = display_url(url)
        self._exact_max = exact_search_max_chunks
        self._closed = False
        self._close_lock = threading.Lock()
        migrate(url, self.url, _CONNECT_TIMEOUT_S)
        self._pool: ConnectionPool[psycopg.Connection[tuple[Any, ...]]] = ConnectionPool(
            url,
            min_size=1,
            max_size=_POOL_SIZE,
            kwargs={"autocommit": True, "connect_timeout": _CONNECT_TIMEOUT_S},
            configure=register_vector,
            open=False,
            name="knowhub-store",
        )
        try:
            self._pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
        except Exception as exc:
            self._pool.close()
            raise StoreError(f"cannot connect to PostgreSQL at {self.url}: {exc}") from exc

    def close(self) -> None:
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._pool.close()

    def server_state(self) -> PgState:
        return PgState(self._conn, self._transaction)

    # -- connections and schema ----------------------------------------------------

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        if self._closed:
            raise StoreError(f"the store {self.url} is closed: open a new one")
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise StoreError(f"PostgreSQL at {self.url} failed: {str(exc).strip()}") from exc

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """One atomic write (rolled back on any error)."""
        with self._conn() as conn, conn.transaction():
            yield conn

    def _one(self, query: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        with self._conn() as conn:
            return conn.execute(query.encode(), params).fetchone()

    def _all(
        self, query: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        with self._conn() as conn:
            return conn.execute(query.encode(), params).fetchall()

    # -- collections -------------------------------------------------------------

    def ensure_collection(self, name: str, embedder: str, dim: int) -> int:
        """Return the collection's id, creating it (and its vector index); refuse another
        embedder or dimension."""
        row = self._one(
            "SELECT id, embedder, dim FROM knowhub.collections WHERE name = %s", (name,)
        )
        if row is None:
            with self._transaction() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                created = conn.execute(
                    "INSERT INTO knowhub.collections(name, embedder, dim, created_at) "
                    "VALUES (%s, %s, %s, to_char(now() AT TIME ZONE 'UTC', "
                    '\'YYYY-MM-DD"T"HH24:MI:SS"Z"\')) ON CONFLICT (name) DO NOTHING RETURNING id',
                    (name, embedder, dim),
                ).fetchone()
                if created is not None:
                    if dim <= HNSW_MAX_DIM:  # larger: exact search only
                        conn.execute(hnsw_index(int(created[0]), dim).encode())
                    return int(created[0])
            row = self._one(
                "SELECT id, embedder, dim FROM knowhub.collections WHERE name = %s", (name,)
            )
        check_embedder(name, (row[1], row[2]), embedder, dim)
        return int(row[0])

    def _no_collection(self, cid: int) -> CollectionNotFound:
        """What a call naming a collection id the server does not hold (dropped) raises."""
        return CollectionNotFound(
            f"no collection with id {cid} in {self.url}: list them with status"
        )

    def embedder_of(self, cid: int) -> tuple[str, int]:
        """The (embedder id, dimension) the collection was built with."""
        row = self._one("SELECT embedder, dim FROM knowhub.collections WHERE id = %s", (cid,))
        if row is None:
            raise self._no_collection(cid)
        return str(row[0]), int(row[1])

    def collection_id(self, name: str) -> int | None:
        row = self._one("SELECT id FROM knowhub.collections WHERE name = %s", (name,))
        return None if row is None else int(row[0])

    def collections(self) -> list[CollectionInfo]:
        # lexical_chunks is the row count BM25 works with (the counter), so a drift
        # between it and the rows shows here as it does in integrity_report.
        rows = self._all(
            "SELECT c.name, c.embedder, c.dim, c.version, c.created_at, "
            "(SELECT count(*) FROM knowhub.documents d WHERE d.collection_id = c.id), "
            "(SELECT count(*) FROM knowhub.chunks k WHERE k.collection_id = c.id), c.chunks "
            'FROM knowhub.collections c ORDER BY c.name COLLATE "C"'
        )
        return [CollectionInfo(r[0], r[1], r[2], r[3], r[5], r[6], r[4], int(r[7])) for r in rows]

    def version(self, cid: int) -> int:
        row = self._one("SELECT version FROM knowhub.collections WHERE id = %s", (cid,))
        if row is None:
            raise self._no_collection(cid)
        return int(row[0])

    def drop_collection(self, cid: int) -> None:
        """Delete the collection, its rows and its vector index in one transaction (ids
        come from an identity sequence, so the id is never reused)."""
        with self._transaction() as conn:
            found = conn.execute(
                "SELECT 1 FROM knowhub.collections WHERE id = %s FOR UPDATE", (cid,)
            ).fetchone()
            if found is None:
                return
            for table in ("chunks", "documents", "faq"):
                conn.execute(
                    f"DELETE FROM knowhub.{table} WHERE collection_id = %s".encode(), (cid,)
                )
            conn.execute("DELETE FROM knowhub.collections WHERE id = %s", (cid,))
            # Last: dropping an index locks the whole chunks table until the commit.
            conn.execute(f"DROP INDEX IF EXISTS knowhub.chunks_hnsw_{int(cid)}".encode())

    # -- metadata ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._one("SELECT value FROM knowhub.meta WHERE key = %s", (checked_meta_key(key),))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str | None, expected: str | None) -> bool:
        """Compare-and-set ``key`` in one statement: a concurrent writer's committed change
        makes its condition false (PostgreSQL re-checks the updated row), so it returns False."""
        key = checked_meta_key(key)
        with self._transaction() as conn:
            if expected is None and value is None:
                absent = conn.execute("SELECT 1 FROM knowhub.meta WHERE key = %s", (key,))
                return absent.fetchone() is None
            if expected is None:
                cur = conn.execute(
                    "INSERT INTO knowhub.meta(key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (key, value),
                )
            elif value is None:
                cur = conn.execute(
                    "DELETE FROM knowhub.meta WHERE key = %s AND value = %s", (key, expected)
                )
            else:
                cur = conn.execute(
                    "UPDATE knowhub.meta SET value = %s WHERE key = %s AND value = %s",
                    (value, key, expected),
                )
            return cur.rowcount == 1

    # -- documents ---------------------------------------------------------------

    def record(self, cid: int, path: str) -> DocumentRecord | None:
        row = self._one(f"{DOC_SELECT} WHERE d.collection_id = %s AND d.path = %s", (cid, path))
        return None if row is None else record_of(row)

    def records(self, cid: int) -> list[DocumentRecord]:
        rows = self._all(
            f'{DOC_SELECT} WHERE d.collection_id = %s ORDER BY d.source COLLATE "C"', (cid,)
        )
        return [record_of(r) for r in rows]

    def find_records(self, cid: int, path_or_source: str) -> list[DocumentRecord]:
        """Documents whose path or source equals the key."""
        rows = self._all(
            f"{DOC_SELECT} WHERE d.collection_id = %(cid)s AND "
            "(d.path = %(key)s OR d.source = %(key)s) ORDER BY d.source",
            {"cid": cid, "key": path_or_source},
        )
        return [record_of(r) for r in rows]

    def find_by_hash_prefix(self, cid: int, prefix: str) -> list[DocumentRecord]:
        """Documents whose doc_hash starts with ``prefix`` (starts_with(): no LIKE pattern)."""
        if not prefix:
            return []
        rows = self._all(
            f"{DOC_SELECT} WHERE d.collection_id = %s AND starts_with(d.doc_hash, %s) "
            "ORDER BY d.source",
            (cid, prefix),
        )
        return [record_of(r) for r in rows]

    def touch(self, cid: int, path: str, size: int, mtime_ns: int) -> None:
        """Record a new size/mtime for a file whose content hash did not change."""
        with self._transaction() as conn:
            conn.execute(
                "UPDATE knowhub.documents SET size = %s, mtime_ns = %s "
                "WHERE collection_id = %s AND path = %s",
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
        """Swap a document's old chunks (and, on a move, those at ``previous``) for new
        ones in one transaction."""
        embedder, dim = self.embedder_of(cid)
        rows = checked_vectors(record, chunks, vectors, tokens, cache_keys, embedder, dim)
        term_lists = [t.split() for t in tokens]
        with self._transaction() as conn:
            # Locking the collection row first serialises writers of one collection, so
            # two replacements of the same path cannot both delete-then-insert.
            conn.execute("SELECT 1 FROM knowhub.collections WHERE id = %s FOR UPDATE", (cid,))
            old_chunks = old_terms = 0
            for path in moved_paths(record, previous):
                chunk_count, term_count = self._delete(conn, cid, path)
                old_chunks, old_terms = old_chunks + chunk_count, old_terms + term_count
            (doc_id,) = conn.execute(
                INSERT_DOCUMENT, document_values(cid, record, len(chunks))
            ).fetchone() or (None,)
            with conn.cursor() as cur:
                cur.executemany(
                    INSERT_CHUNKS, chunk_values(doc_id, cid, chunks, rows, tokens, term_lists)
                )
                cur.executemany(INSERT_CACHE, list(zip(cache_keys, rows, strict=True)))
            conn.execute(
                "UPDATE knowhub.collections SET version = version + 1, chunks = chunks + %s, "
                "terms = terms + %s WHERE id = %s",
                (len(chunks) - old_chunks, sum(map(len, term_lists)) - old_terms, cid),
            )

    def remove_document(self, cid: int, path: str) -> bool:
        """Delete a document and its chunks; False if it was not there."""
        with self._transaction() as conn:
            conn.execute("SELECT 1 FROM knowhub.collections WHERE id = %s FOR UPDATE", (cid,))
            removed = conn.execute(
                "SELECT 1 FROM knowhub.documents WHERE collection_id = %s AND path = %s",
                (cid, path),
            ).fetchone()
            if removed is None:
                return False
            old_chunks, old_terms = self._delete(conn, cid, path)
            conn.execute(
                "UPDATE knowhub.collections SET version = version + 1, chunks = chunks - %s, "
                "terms = terms - %s WHERE id = %s",
                (old_chunks, old_terms, cid),
            )
        return True

    def stored_chunks(self, cid: int, path: str) -> list[StoredChunk]:
        """The document's chunks with their vectors and tokens, in one consistent read."""
        rows = self._all(
            "SELECT k.chunk_id, d.doc_hash, k.idx, k.text, k.section_path, k.page, "
            "k.line_start, k.line_end, k.char_start, k.char_end, k.language, k.metadata, "
            "k.embedding, k.tokens FROM knowhub.documents d "
            "JOIN knowhub.chunks k ON k.document_id = d.id "
            "WHERE d.collection_id = %s AND d.path = %s ORDER BY k.idx, k.id",
            (cid, path),
        )
        # Vector and tokens share the chunk's row here, so neither leg can lack them.
        return [StoredChunk(chunk_of(r), array_of(r[12]), str(r[13])) for r in rows]

    @staticmethod
    def _delete(conn: psycopg.Connection[Any], cid: int, path: str) -> tuple[int, int]:
        """Delete a document (its chunks cascade): how many chunks and terms it had."""
        row = conn.execute(
            "WITH gone AS (DELETE FROM knowhub.documents WHERE collection_id = %s AND path = %s "
            "RETURNING id) SELECT count(k.id), coalesce(sum(k.n_terms), 0) FROM gone "
            "JOIN knowhub.chunks k ON k.document_id = gone.id",
            (cid, path),
        ).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    # -- embedding cache ---------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, Vectors]:
        """Vectors already computed for these cache keys (chunk-content hashes)."""
        if not keys:
            return {}
        rows = self._all(
            "SELECT key, embedding FROM knowhub.embedding_cache WHERE key = ANY(%s)", (list(keys),)
        )
        return {str(key): array_of(vector) for key, vector in rows}

    def cache_vectors(self, keys: Sequence[str], vectors: Vectors) -> None:
        """Keep vectors no document holds yet under their cache keys (a stopped ingest's)."""
        if not len(keys):
            return
        rows = [np.asarray(v, dtype=np.float32) for v in vectors]
        with self._transaction() as conn, conn.cursor() as cur:
            cur.executemany(INSERT_CACHE, list(zip(keys, rows, strict=True)))

    # -- search ------------------------------------------------------------------

    def lexical_search(
        self, cid: int, tokens: Sequence[str], limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """BM25 over the collection's terms, as FTS5 scores it: (chunk row id, score ↑)."""
        lexical = lexical_statement(filters, tokens)
        if lexical is None:  # no query term can be in a tsvector
            return []
        statement, params = lexical
        params.update(cid=cid, limit=limit, k1=_K1, b=_B)
        rows = self._all(statement, params)
        return [(int(rowid), float(score)) for rowid, score in rows]

    def dense_search(
        self, cid: int, query: Vectors, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """Cosine similarity: (chunk row id, similarity), best first."""
        row = self._one("SELECT chunks, dim FROM knowhub.collections WHERE id = %s", (cid,))
        if row is None:
            raise self._no_collection(cid)
        chunks, dim = int(row[0]), int(row[1])
        exact = chunks <= self._exact_max or dim > HNSW_MAX_DIM
        statement, params = dense_statement(filters, cid, dim, exact=exact)
        params.update(cid=cid, limit=limit, query=np.asarray(query, dtype=np.float32).ravel())
        with self._conn() as conn, conn.transaction():
            if chunks > self._exact_max:
                # Filtered kNN: keep walking the graph until enough rows pass the filter.
                conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                conn.execute(
                    sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                        sql.Literal(min(max(2 * limit, 100), 1000))
                    )
                )
            rows = conn.execute(statement.encode(), params).fetchall()
        return [(int(rowid), float(score)) for rowid, score in rows]

    def hits(self, ids: Sequence[int]) -> dict[int, Hit]:
        """Full rows for chunk row ids (score 0; the caller sets scores)."""
        rows = self._all(f"{HIT_SELECT} WHERE k.id = ANY(%s)", ([int(i) for i in ids],))
        return {int(row[0]): hit_of(row) for row in rows}

    def chunk_sources(self, cid: int) -> dict[int, str]:
        """Chunk row id → document source, for every chunk of a collection (evaluation)."""
        rows = self._all(
            "SELECT k.id, d.source FROM knowhub.chunks k "
            "JOIN knowhub.documents d ON d.id = k.document_id WHERE k.collection_id = %s",
            (cid,),
        )
        return {int(rowid): str(source) for rowid, source in rows}

    def chunks_by_id(self, chunk_id: str) -> list[Hit]:
        """Chunks with this chunk id (one, unless identical files sit at two paths)."""
        rows = self._all(f"{HIT_SELECT} WHERE k.chunk_id = %s ORDER BY k.id", (chunk_id,))
        return [hit_of(r) for r in rows]

    # -- FAQ -----------------------------------------------------------------------

    def replace_faq(
        self, cid: int, source: str, entries: Sequence[tuple[str, str, int]], vectors: Vectors
    ) -> None:
        """Make ``entries`` (question, answer, line) the FAQ of ``source``, atomically."""
        rows = [np.asarray(v, dtype=np.float32) for v in vectors]
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM knowhub.faq WHERE collection_id = %s AND source = %s", (cid, source)
            )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO knowhub.faq(collection_id, source, question, answer, line, "
                    "embedding) VALUES (%s, %s, %s, %s, %s, %s)",
                    [
                        (cid, source, q, a, line, v)
                        for (q, a, line), v in zip(entries, rows, strict=True)
                    ],
                )

    def faq(self, cid: int) -> list[FaqEntry]:
        rows = self._all(
            "SELECT source, question, answer, line, embedding FROM knowhub.faq "
            'WHERE collection_id = %s ORDER BY source COLLATE "C", line, id',
            (cid,),
        )
        return [FaqEntry(r[0], r[1], r[2], r[3], array_of(r[4])) for r in rows]

    def remove_faq(self, cid: int, source: str) -> int:
        """Delete the FAQ entries of ``source``; how many there were."""
        with self._transaction() as conn:
            cur = conn.execute(
                "DELETE FROM knowhub.faq WHERE collection_id = %s AND source = %s", (cid, source)
            )
            return int(cur.rowcount)

    # -- health --------------------------------------------------------------------

    def integrity_report(self) -> dict[str, int]:
        """Counts that must all be zero in a consistent store (the SQLite store's keys)."""
        checks = {
            "orphan_chunks": "SELECT count(*) FROM knowhub.chunks k LEFT JOIN knowhub.documents d "
            "ON d.id = k.document_id WHERE d.id IS NULL OR d.collection_id != k.collection_id",
            "chunk_count_mismatch": "SELECT count(*) FROM knowhub.documents d "
            "WHERE d.chunk_count != (SELECT count(*) FROM knowhub.chunks k "
            "WHERE k.document_id = d.id)",
            "foreign_chunk_ids": "SELECT count(*) FROM knowhub.chunks k JOIN knowhub.documents d "
            "ON d.id = k.document_id WHERE left(k.chunk_id, 16) != "
            "coalesce(d.metadata->'knowhub'->>'doc_id', left(d.doc_hash, 16))",
            # The lexical side here is the rows' terms plus the BM25 counters: a counter
            # that drifted from the rows ranks every search wrongly.
            "fts_mismatch": "SELECT (SELECT count(*) FROM knowhub.chunks "
            "WHERE n_terms < length(terms)) + (SELECT coalesce(sum(abs(c.chunks - "
            "(SELECT count(*) FROM knowhub.chunks k WHERE k.collection_id = c.id)) + abs(c.terms - "
            "(SELECT coalesce(sum(k.n_terms), 0) FROM knowhub.chunks k "
            "WHERE k.collection_id = c.id))), 0) FROM knowhub.collections c)",
        }
        with self._conn() as conn, conn.transaction():  # one snapshot for all the checks
            return {
                name: int((conn.execute(query.encode()).fetchone() or (0,))[0])
                for name, query in checks.items()
            }

    def orphans(self, cid: int) -> list[Orphan]:
        """Chunks whose document row is gone (the index legs live in the chunk's own row,
        so a lexical or vector orphan cannot exist here)."""
        rows = self._all(ORPHAN_CHUNKS.format(what="k.chunk_id"), (cid,))
        return [Orphan("chunk", str(r[0])) for r in rows]

    def remove_orphans(self, cid: int) -> int:
        """Delete orphan chunks in one transaction, keeping the BM25 counters right."""
        with self._transaction() as conn:
            conn.execute("SELECT 1 FROM knowhub.collections WHERE id = %s FOR UPDATE", (cid,))
            row = conn.execute(
                "WITH gone AS (DELETE FROM knowhub.chunks WHERE id IN ("
                f"{ORPHAN_CHUNKS.format(what='k.id')}) RETURNING n_terms) "
                "SELECT count(*), coalesce(sum(n_terms), 0) FROM gone",
                (cid,),
            ).fetchone()
            removed, terms = (0, 0) if row is None else (int(row[0]), int(row[1]))
            if removed:
                conn.execute(
                    "UPDATE knowhub.collections SET version = version + 1, "
                    "chunks = chunks - %s, terms = terms - %s WHERE id = %s",
                    (removed, terms, cid),
                )
        return removed


def create(settings: Settings) -> Store:
    # Typed as the contract, so mypy proves PostgresStore keeps every method of it.
    options = settings.store.postgres
    url = options.url
    if options.url_env:
        url = settings.secret(options.url_env) or ""
        if not url:
            what = "the PostgreSQL URL (postgresql://user:password@host:5432/db)"
            raise StoreError(secret_unset("store.postgres.url_env", options.url_env, what))
    if not url:
        raise StoreError(
            "store.provider is postgres but no server is named: set store.postgres.url_env "
            "(an environment variable holding the URL) or store.postgres.url"
        )
    return PostgresStore(url)
