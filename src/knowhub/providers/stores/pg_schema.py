"""PostgreSQL schema of the postgres store (bump PG_SCHEMA_VERSION on any change).

Everything lives in its own PostgreSQL schema, ``knowhub``, so the store can share a
database with other applications. One ``chunks`` table holds every collection's rows,
with an untyped ``vector`` column: pgvector needs a fixed dimension only for an index, so
each collection gets a *partial expression* HNSW index over ``embedding::vector(dim)``
(see :func:`hnsw_index`). That keeps one table, one id sequence and one join path for
``hits``/``chunks_by_id`` across collections, while the index's cast rejects a vector of
the wrong dimension inside the writing transaction.
"""

from __future__ import annotations

__all__ = ["HNSW_MAX_DIM", "PG_SCHEMA", "PG_SCHEMA_VERSION", "hnsw_index"]

PG_SCHEMA_VERSION = "1"

# pgvector cannot build an HNSW index over more dimensions than this (``vector`` type).
HNSW_MAX_DIM = 2000

PG_SCHEMA: tuple[str, ...] = (
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


def hnsw_index(collection_id: int, dim: int) -> str:
    """The DDL of a collection's vector index (searches must repeat its cast and predicate)."""
    cid, dim = int(collection_id), int(dim)
    return (
        f"CREATE INDEX IF NOT EXISTS chunks_hnsw_{cid} ON knowhub.chunks "
        f"USING hnsw ((embedding::vector({dim})) vector_cosine_ops) WHERE collection_id = {cid}"
    )
