"""The SQL of the SQLite catalog, and its rows as models.

Column lists and queries of :class:`.sqlite.SQLiteStore` too long to read inline, and the
conversion of a selected row into a
:class:`~knowhub.models.DocumentRecord`, :class:`~knowhub.models.Chunk` or
:class:`~knowhub.models.Hit`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from knowhub.models import Chunk, DocumentRecord, Hit
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.schema import fts_table

__all__ = [
    "DOC_COLUMNS",
    "HIT_SELECT",
    "INSERT_CHUNKS",
    "INSERT_DOCUMENT",
    "INTEGRITY_CHECKS",
    "NEXT_COLLECTION_ID",
    "ORPHAN_CHUNKS",
    "ORPHAN_FTS",
    "chunk_of",
    "chunk_values",
    "document_values",
    "each_in_savepoint",
    "hit_of",
    "integrity_counts",
    "record_of",
    "vector_of",
]

DOC_COLUMNS = (
    "c.name, d.source, d.path, d.doc_hash, d.size, d.mtime_ns, d.title, d.format, "
    "d.chunk_count, d.char_count, d.pages, d.ingested_at, d.metadata"
)
HIT_SELECT = (
    "SELECT k.id, k.chunk_id, d.source, d.title, k.text, k.page, k.section_path, k.line_start, "
    "k.line_end, k.char_start, k.char_end, d.doc_hash, c.name, k.language, k.metadata "
    "FROM chunks k JOIN documents d ON d.id = k.document_id "
    "JOIN collections c ON c.id = k.collection_id"
)
INSERT_DOCUMENT = (
    "INSERT INTO documents(collection_id, path, source, doc_hash, size, mtime_ns, "
    "title, format, chunk_count, char_count, pages, ingested_at, metadata) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
INSERT_CHUNKS = (
    "INSERT INTO chunks(id, chunk_id, document_id, collection_id, idx, text, "
    "section_path, page, line_start, line_end, char_start, char_end, language, "
    "metadata, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
# Chunks of a collection whose document row is gone (written around the store, or by a bug).
ORPHAN_CHUNKS = (
    "SELECT {what} FROM chunks k LEFT JOIN documents d ON d.id = k.document_id "
    "WHERE k.collection_id = ? AND (d.id IS NULL OR d.collection_id != k.collection_id)"
)
# FTS rows whose chunk row is gone: a lexical hit on one would resolve to nothing.
ORPHAN_FTS = (
    "SELECT f.rowid FROM {fts} f LEFT JOIN chunks k ON k.id = f.rowid AND k.collection_id = ? "
    "WHERE k.id IS NULL"
)

# SQLite hands a deleted row's id out again; a dropped collection's must never be, since
# dense matrices (here and in other processes) and result caches are keyed by (id, version).
NEXT_COLLECTION_ID = (
    "(SELECT max(coalesce((SELECT max(id) FROM collections), 0), coalesce((SELECT "
    "CAST(value AS INTEGER) FROM meta WHERE key = 'dropped_collection_id'), 0)) + 1)"
)
# Counts that are all zero in a consistent store (integrity_report), FTS checks aside.
INTEGRITY_CHECKS = (
    (
        "orphan_chunks",
        "SELECT count(*) FROM chunks k LEFT JOIN documents d "
        "ON d.id = k.document_id WHERE d.id IS NULL",
    ),
    (
        "chunk_count_mismatch",
        "SELECT count(*) FROM documents d WHERE d.chunk_count != "
        "(SELECT count(*) FROM chunks k WHERE k.document_id = d.id)",
    ),
    (
        "foreign_chunk_ids",
        "SELECT count(*) FROM chunks k JOIN documents d "
        # A chunk id starts with its document's id (DocumentRecord.doc_id).
        "ON d.id = k.document_id WHERE substr(k.chunk_id, 1, 16) != "
        "coalesce(json_extract(d.metadata, '$.knowhub.doc_id'), substr(d.doc_hash, 1, 16))",
    ),
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
        json.dumps(record.metadata, ensure_ascii=False),
    )


def chunk_values(
    ids: Sequence[int],
    doc_id: int | None,
    cid: int,
    chunks: Sequence[Chunk],
    blobs: Sequence[bytes],
) -> list[tuple[Any, ...]]:
    """The values of :data:`INSERT_CHUNKS`: each chunk of document ``doc_id`` under its
    row id, with its vector as a float32 blob."""
    return [
        (
            row_id,
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
            json.dumps(c.metadata, ensure_ascii=False),
            blob,
        )
        for row_id, c, blob in zip(ids, chunks, blobs, strict=True)
    ]


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
        metadata=json.loads(row[12] or "{}"),
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
        metadata=json.loads(row[11] or "{}"),
    )


def vector_of(blob: bytes | None) -> Vectors | None:
    """A stored float32 vector; None for a missing or torn blob (verify reports it)."""
    if not blob or len(blob) % 4:
        return None
    return np.frombuffer(blob, dtype=np.float32)


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
        metadata=json.loads(row[14] or "{}"),
    )


def each_in_savepoint(db: sqlite3.Connection, write: Callable[[], None]) -> Exception | None:
    """Run ``write`` inside the open transaction, undone alone if it fails: its error."""
    db.execute("SAVEPOINT one_document")
    try:
        write()
    except Exception as exc:  # the caller reports it for that document only
        if not db.in_transaction:  # SQLite rolled it all back itself (disk full, I/O)
            raise
        db.execute("ROLLBACK TO one_document")
        db.execute("RELEASE one_document")
        return exc
    db.execute("RELEASE one_document")
    return None


def integrity_counts(db: sqlite3.Connection) -> dict[str, int]:
    """Counts that must all be zero in a consistent store, FTS rows against chunks included."""
    report = {name: int(db.execute(sql).fetchone()[0]) for name, sql in INTEGRITY_CHECKS}
    mismatched = 0
    for (cid,) in db.execute("SELECT id FROM collections").fetchall():
        fts = fts_table(int(cid))
        (n_fts,) = db.execute(f"SELECT count(*) FROM {fts}").fetchone()
        (n_chunks,) = db.execute(
            "SELECT count(*) FROM chunks WHERE collection_id = ?", (cid,)
        ).fetchone()
        (n_orphan_fts,) = db.execute(
            f"SELECT count(*) FROM {fts} f LEFT JOIN chunks k ON k.id = f.rowid WHERE k.id IS NULL"
        ).fetchone()
        mismatched += abs(int(n_fts) - int(n_chunks)) + int(n_orphan_fts)
    report["fts_mismatch"] = mismatched
    return report
