"""PostgreSQL schema of the postgres store (on any change: bump PG_SCHEMA_VERSION, add the
upgrade from the previous version to _UPGRADES).

Everything lives in its own PostgreSQL schema, ``knowhub``, so the store can share a
database with other applications. One ``chunks`` table holds every collection's rows,
with an untyped ``vector`` column: pgvector needs a fixed dimension only for an index, so
each collection gets a *partial expression* HNSW index over ``embedding::vector(dim)``
(see :func:`hnsw_index`). That keeps one table, one id sequence and one join path for
``hits``/``chunks_by_id`` across collections, while the index's cast rejects a vector of
the wrong dimension inside the writing transaction.
"""

from __future__ import annotations

from typing import Any

import psycopg

from knowhub.errors import StoreError
from knowhub.providers.stores.pg_state import STATE_TABLE

__all__ = [
    "HNSW_MAX_DIM",
    "MIGRATION_LOCK",
    "PG_SCHEMA",
    "PG_SCHEMA_VERSION",
    "hnsw_index",
    "migrate",
]

PG_SCHEMA_VERSION = "3"
# Serialises schema changes between processes opening a database at once.
MIGRATION_LOCK = 0x6B6E6F77687562  # "knowhub"

# pgvector cannot build an HNSW index over more dimensions than this (``vector`` type).
HNSW_MAX_DIM = 2000

_SCHEMA_V1: tuple[str, ...] = (
    "CREATE SCHEMA IF NOT EXISTS knowhub",
    "CREATE TABLE knowhub.meta(key text PRIMARY KEY, value text NOT NULL)",
    # chunks / terms: the collection's row and term counts, BM25's N and avgdl, kept in
    # the same transaction as every write so a search never scans the collection for them.
    """CREATE TABLE knowhub.collections(
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL UNIQUE,
        embedder text NOT NULL,
        dim integer NOT NULL,
        version bigint NOT NULL DEFAULT 0,
        created_at text NOT NULL,
        chunks bigint NOT NULL DEFAULT 0,
        terms bigint NOT NULL DEFAULT 0)""",
    """CREATE TABLE knowhub.documents(
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        collection_id bigint NOT NULL REFERENCES knowhub.collections(id),
        path text NOT NULL,
        source text NOT NULL,
        doc_hash text NOT NULL,
        size bigint NOT NULL,
        mtime_ns bigint NOT NULL,
        title text NOT NULL,
        format text NOT NULL,
        chunk_count integer NOT NULL,
        char_count bigint NOT NULL,
        pages integer,
        ingested_at text NOT NULL,
        metadata jsonb NOT NULL,
        UNIQUE(collection_id, path))""",
    "CREATE INDEX documents_hash ON knowhub.documents(doc_hash text_pattern_ops)",
    # tokens: our own lexical terms as given (export reads them back verbatim); terms: the
    # same as a tsvector built from a literal (never PostgreSQL's parser), positions kept
    # so term frequencies can be read back; n_terms: BM25's document length.
    """CREATE TABLE knowhub.chunks(
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        chunk_id text NOT NULL,
        document_id bigint NOT NULL REFERENCES knowhub.documents(id) ON DELETE CASCADE,
        collection_id bigint NOT NULL REFERENCES knowhub.collections(id),
        idx integer NOT NULL,
        text text NOT NULL,
        section_path text NOT NULL,
        page integer,
        line_start integer NOT NULL,
        line_end integer NOT NULL,
        char_start integer NOT NULL,
        char_end integer NOT NULL,
        language text NOT NULL,
        metadata jsonb NOT NULL,
        embedding vector NOT NULL,
        tokens text NOT NULL,
        terms tsvector NOT NULL,
        n_terms integer NOT NULL)""",
    "CREATE INDEX chunks_document ON knowhub.chunks(document_id)",
    "CREATE INDEX chunks_collection ON knowhub.chunks(collection_id)",
    "CREATE INDEX chunks_chunk_id ON knowhub.chunks(chunk_id)",
    "CREATE INDEX chunks_terms ON knowhub.chunks USING gin(terms)",
    # Keyed by sha256(embedder id + text): unchanged text is never embedded twice.
    "CREATE TABLE knowhub.embedding_cache(key text PRIMARY KEY, embedding vector NOT NULL)",
    """CREATE TABLE knowhub.faq(
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        collection_id bigint NOT NULL REFERENCES knowhub.collections(id),
        source text NOT NULL,
        question text NOT NULL,
        answer text NOT NULL,
        line integer NOT NULL,
        embedding vector NOT NULL)""",
    "CREATE INDEX faq_collection ON knowhub.faq(collection_id, source)",
)
# Version 2: indexes for filters (pg_search.filter_sql), so a selective filter reads the
# rows it keeps. jsonb_path_ops answers metadata containment (@>) with a smaller index
# than the default operator class, which also indexes keys alone.
_FILTER_INDEXES: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS chunks_metadata ON knowhub.chunks "
    "USING gin(metadata jsonb_path_ops)",
    "CREATE INDEX IF NOT EXISTS chunks_language ON knowhub.chunks(collection_id, language)",
    "CREATE INDEX IF NOT EXISTS documents_source ON knowhub.documents(collection_id, source)",
    "CREATE INDEX IF NOT EXISTS documents_format ON knowhub.documents(collection_id, format)",
)
# Version 3: server state shared by replicas (pg_state.STATE_TABLE).
PG_SCHEMA: tuple[str, ...] = _SCHEMA_V1 + _FILTER_INDEXES + STATE_TABLE
# The statements that bring a database of each older version to the next one.
_UPGRADES: dict[str, tuple[str, tuple[str, ...]]] = {
    "1": ("2", _FILTER_INDEXES),
    "2": ("3", STATE_TABLE),
}


def hnsw_index(collection_id: int, dim: int) -> str:
    """The DDL of a collection's vector index (searches must repeat its cast and predicate)."""
    cid, dim = int(collection_id), int(dim)
    return (
        f"CREATE INDEX IF NOT EXISTS chunks_hnsw_{cid} ON knowhub.chunks "
        f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE collection_id = {cid}"
    )


def migrate(url: str, shown: str, timeout_s: int) -> None:
    """Create the schema in a new database or bring an older one to PG_SCHEMA_VERSION, in one
    transaction (``shown``: the URL without its password, for messages)."""
    try:
        conn = psycopg.connect(url, connect_timeout=timeout_s)
    except psycopg.Error as exc:
        raise StoreError(
            # One line: libpq's message runs over several (a hint on a tabbed line of its own).
            f"cannot connect to PostgreSQL at {shown}: {' '.join(str(exc).split())}; check that "
            "the server runs and the URL (store.postgres.url or url_env) is right"
        ) from exc
    with conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        _ensure_pgvector(conn, shown)
        if conn.execute("SELECT to_regclass('knowhub.meta')").fetchone() == (None,):
            for statement in PG_SCHEMA:
                conn.execute(statement.encode())
            conn.execute(
                "INSERT INTO knowhub.meta(key, value) VALUES ('schema_version', %s)",
                (PG_SCHEMA_VERSION,),
            )
        row = conn.execute("SELECT value FROM knowhub.meta WHERE key='schema_version'")
        (version,) = row.fetchone() or ("missing",)
        while version in _UPGRADES:
            # Building an index here blocks writers (never readers) until the commit.
            version, statements = _UPGRADES[version]
            for statement in statements:
                conn.execute(statement.encode())
            conn.execute(
                "UPDATE knowhub.meta SET value = %s WHERE key = 'schema_version'", (version,)
            )
    if version != PG_SCHEMA_VERSION:
        raise StoreError(
            f"the knowhub schema in {shown} has version {version}, this knowhub expects "
            f"{PG_SCHEMA_VERSION}: re-ingest into another database"
        )


def _ensure_pgvector(conn: psycopg.Connection[Any], shown: str) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone():
        raise StoreError(
            f"the PostgreSQL server at {shown} lacks the pgvector extension: install it "
            "(e.g. the postgresql-<version>-pgvector package), then CREATE EXTENSION vector"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege as exc:
        raise StoreError(
            f"pgvector is not enabled in {shown} and this user may not enable it: ask "
            "an administrator to run CREATE EXTENSION vector in that database"
        ) from exc
