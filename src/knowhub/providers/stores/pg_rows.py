"""The SQL of the postgres store's rows, and its rows as models.

Column lists and statements of :class:`.postgres.PostgresStore` too long to read inline,
the values a document's write inserts, and the conversion of a selected row into a
:class:`~knowhub.models.DocumentRecord`, :class:`~knowhub.models.Chunk` or
:class:`~knowhub.models.Hit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from knowhub.models import Chunk, DocumentRecord, Hit
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.pg_search import tsvector

__all__ = [
    "DOC_SELECT",
    "HIT_SELECT",
    "INSERT_CACHE",
    "INSERT_CHUNKS",
    "INSERT_DOCUMENT",
    "ORPHAN_CHUNKS",
    "array_of",
    "chunk_of",
    "chunk_values",
    "document_values",
    "hit_of",
    "record_of",
]

INSERT_DOCUMENT = (
    "INSERT INTO knowhub.documents(collection_id, path, source, doc_hash, size, "
    "mtime_ns, title, format, chunk_count, char_count, pages, ingested_at, metadata) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) RETURNING id"
)
INSERT_CHUNKS = (
    "INSERT INTO knowhub.chunks(chunk_id, document_id, collection_id, idx, text, "
    "section_path, page, line_start, line_end, char_start, char_end, language, "
    "metadata, embedding, tokens, terms, n_terms) "
    "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s)"
)
INSERT_CACHE = (
    "INSERT INTO knowhub.embedding_cache(key, embedding) VALUES (%s, %s) "
    "ON CONFLICT (key) DO NOTHING"
)
ORPHAN_CHUNKS = (
    "SELECT {what} FROM knowhub.chunks k LEFT JOIN knowhub.documents d "
    "ON d.id = k.document_id "
    "WHERE k.collection_id = %s AND (d.id IS NULL OR d.collection_id != k.collection_id)"
)
DOC_SELECT = (
    "SELECT c.name, d.source, d.path, d.doc_hash, d.size, d.mtime_ns, d.title, d.format, "
    "d.chunk_count, d.char_count, d.pages, d.ingested_at, d.metadata "
    "FROM knowhub.documents d JOIN knowhub.collections c ON c.id = d.collection_id"
)
HIT_SELECT = (
    "SELECT k.id, k.chunk_id, d.source, d.title, k.text, k.page, k.section_path, k.line_start, "
    "k.line_end, k.char_start, k.char_end, d.doc_hash, c.name, k.language, k.metadata "
    "FROM knowhub.chunks k JOIN knowhub.documents d ON d.id = k.document_id "
    "JOIN knowhub.collections c ON c.id = k.collection_id"
)


def document_values(cid: int, record: DocumentRecord, chunk_count: int) -> tuple[Any, ...]:
    """The values of :data:`INSERT_DOCUMENT` for ``record``."""
    return (
        cid,
        record.path,
        record.source,
        record.doc_hash,
        record.size,
        record.mtime_ns,
        record.title,
        record.format,
        chunk_count,
        record.char_count,
        record.pages,
        record.ingested_at,
        Jsonb(record.metadata),
    )


def chunk_values(
    doc_id: Any,
    cid: int,
    chunks: Sequence[Chunk],
    vectors: Vectors,
    tokens: Sequence[str],
    term_lists: Sequence[Sequence[str]],
) -> list[tuple[Any, ...]]:
    """The values of :data:`INSERT_CHUNKS`, one tuple per chunk of document ``doc_id``."""
    return [
        (
            c.chunk_id,
            doc_id,
            cid,
            c.index,
            c.text,
            c.section_path,
            c.page,
            c.line_start,
            c.line_end,
            c.char_start,
            c.char_end,
            c.language,
            Jsonb(c.metadata),
            vector,
            text,
            tsvector(terms),
            len(terms),
        )
        for c, vector, text, terms in zip(chunks, vectors, tokens, term_lists, strict=True)
    ]


def array_of(vector: Any) -> Vectors:
    values = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
    array: Vectors = np.asarray(values, dtype=np.float32)
    return array


def record_of(row: Sequence[Any]) -> DocumentRecord:
    return DocumentRecord(
        collection=row[0],
        source=row[1],
        path=row[2],
        doc_hash=row[3],
        size=row[4],
        mtime_ns=row[5],
        title=row[6],
        format=row[7],
        chunk_count=row[8],
        char_count=row[9],
        pages=row[10],
        ingested_at=row[11],
        metadata=row[12] or {},
    )


def chunk_of(row: Sequence[Any]) -> Chunk:
    return Chunk(
        chunk_id=row[0],
        doc_hash=row[1],
        index=row[2],
        text=row[3],
        section_path=row[4],
        page=row[5],
        line_start=row[6],
        line_end=row[7],
        char_start=row[8],
        char_end=row[9],
        language=row[10],
        metadata=row[11] or {},
    )


def hit_of(row: Sequence[Any]) -> Hit:
    return Hit(
        chunk_id=row[1],
        score=0.0,
        source=row[2],
        title=row[3],
        text=row[4],
        page=row[5],
        section_path=row[6],
        line_start=row[7],
        line_end=row[8],
        char_start=row[9],
        char_end=row[10],
        doc_hash=row[11],
        collection=row[12],
        language=row[13],
        metadata=row[14] or {},
    )
