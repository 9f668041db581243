"""SQLite schema of the embedded store (bump SCHEMA_VERSION on any change)."""

from __future__ import annotations

__all__ = ["ADDED_NAMES", "ADDITIONS", "SCHEMA", "SCHEMA_VERSION", "fts_table"]

SCHEMA_VERSION = "1"

SCHEMA: tuple[str, ...] = (
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE collections(
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        embedder TEXT NOT NULL,
        dim INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL)""",
    """CREATE TABLE documents(
        id INTEGER PRIMARY KEY,
        collection_id INTEGER NOT NULL REFERENCES collections(id),
        path TEXT NOT NULL,
        source TEXT NOT NULL,
        doc_hash TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        title TEXT NOT NULL,
        format TEXT NOT NULL,
        chunk_count INTEGER NOT NULL,
        char_count INTEGER NOT NULL,
        pages INTEGER,
        ingested_at TEXT NOT NULL,
        metadata TEXT NOT NULL,
        UNIQUE(collection_id, path))""",
    "CREATE INDEX documents_hash ON documents(doc_hash)",
    """CREATE TABLE chunks(
        id INTEGER PRIMARY KEY,
        chunk_id TEXT NOT NULL,
        document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        collection_id INTEGER NOT NULL REFERENCES collections(id),
        idx INTEGER NOT NULL,
        text TEXT NOT NULL,
        section_path TEXT NOT NULL,
        page INTEGER,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        char_start INTEGER NOT NULL,
        char_end INTEGER NOT NULL,
        language TEXT NOT NULL,
        metadata TEXT NOT NULL,
        vector BLOB NOT NULL)""",
    "CREATE INDEX chunks_document ON chunks(document_id)",
    "CREATE INDEX chunks_collection ON chunks(collection_id)",
    "CREATE INDEX chunks_chunk_id ON chunks(chunk_id)",
    # Keyed by sha256(embedder id + text): unchanged text is never embedded twice.
    "CREATE TABLE embedding_cache(key TEXT PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID",
)

# Tables added since schema 1, created on open when missing: older stores gain them
# without a re-ingest (nothing existing changes shape).
ADDITIONS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS faq(
        id INTEGER PRIMARY KEY,
        collection_id INTEGER NOT NULL REFERENCES collections(id),
        source TEXT NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        line INTEGER NOT NULL,
        vector BLOB NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS faq_collection ON faq(collection_id, source)",
    # The change log of the derived search index (derived/changes.py).
    """CREATE TABLE IF NOT EXISTS changes(
        collection_id INTEGER NOT NULL,
        version INTEGER NOT NULL,
        row_id INTEGER NOT NULL,
        added INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS changes_version ON changes(collection_id, version)",
    # Covers the fingerprint a process checks a derived index's snapshot against
    # (derived/changes.py): read from the index alone, not from the rows' text and vectors
    # (0.38 s at 100k chunks, 0.2 s with this index and ~0.1 s with the one-call digest).
    "CREATE INDEX IF NOT EXISTS chunks_fingerprint ON chunks(collection_id, document_id, chunk_id)",
    # Server state shared by the processes serving this store (sqlite_state.py).
    """CREATE TABLE IF NOT EXISTS server_state(
        kind TEXT NOT NULL,
        owner TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        size INTEGER NOT NULL,
        touched INTEGER NOT NULL,
        expires REAL NOT NULL,
        PRIMARY KEY(kind, owner, key)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS server_state_touched ON server_state(kind, touched)",
)
# What the store looks for to know whether any addition is missing (all of them, once
# made, are there for good).
ADDED_NAMES = ("faq", "changes", "chunks_fingerprint", "server_state", "server_state_touched")


def fts_table(collection_id: int) -> str:
    """Name of a collection's FTS5 table (one per collection keeps BM25 statistics per corpus)."""
    return f"fts_{int(collection_id)}"
