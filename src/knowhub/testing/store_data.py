"""Documents, chunks, tokens and vectors laid out for a store, without the ingest pipeline.

The builders make realistic documents (knowhub's own :func:`~knowhub.lang.index_tokens`,
chunk ids and cache keys) and L2-normalised float32 vectors, so a test exercises the store
alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from knowhub.ingest.chunk import make_chunk_id
from knowhub.ingest.embed import cache_key
from knowhub.lang import detect_language, index_tokens
from knowhub.models import Chunk, DocumentRecord
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import Store

__all__ = [
    "DIM",
    "EMBEDDER",
    "Doc",
    "assert_whole",
    "axis",
    "make_doc",
    "new_collection",
    "normalised",
    "put",
    "unit_vectors",
]

# Small vectors keep the 2,000-chunk and 300-document cases fast on every backend.
DIM = 16
EMBEDDER = "contract-test/embedder"


def unit_vectors(n: int, seed: int, dim: int = DIM) -> Vectors:
    """``n`` deterministic random unit vectors (float32, rows L2-normalised)."""
    rows = np.random.default_rng(seed).standard_normal((n, dim))
    return normalised(rows)


def normalised(rows: Any) -> Vectors:
    """``rows`` (one vector or a matrix) as float32 rows of length 1."""
    matrix = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    unit: Vectors = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    return unit


def axis(i: int, dim: int = DIM) -> Vectors:
    """The ``i``-th basis vector: orthogonal directions make scores predictable."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[i] = 1.0
    return vector


@dataclass(frozen=True)
class Doc:
    """Everything ``replace_document`` takes for one document."""

    record: DocumentRecord
    chunks: list[Chunk]
    vectors: Vectors
    tokens: list[str]
    cache_keys: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.record.path


def make_doc(
    source: str,
    texts: Sequence[str],
    *,
    collection: str = "docs",
    vectors: Vectors | None = None,
    seed: int = 0,
    fmt: str = "markdown",
    title: str | None = None,
    section_path: str = "",
    metadata: Mapping[str, Any] | None = None,
    chunk_metadata: Sequence[Mapping[str, Any]] | None = None,
    revision: int = 0,
    doc_id: str | None = None,
) -> Doc:
    """A document of one chunk per text, laid out as the ingest pipeline lays it out.

    The chunks are the paragraphs of a text joined by blank lines, so spans and line
    numbers are real; ``revision`` changes the content hash (a new version of the file);
    ``doc_id`` is the document's id, which its chunk ids start with (default: as a record
    from before ids, the doc hash's first 16 digits).
    """
    body = "\n\n".join(texts)
    doc_hash = hashlib.sha256(f"{source}\0{revision}\0{body}".encode()).hexdigest()
    tags = dict(metadata or {})
    extras = [dict(m) for m in chunk_metadata] if chunk_metadata is not None else None
    chunks = _chunks(body, texts, doc_hash, doc_id or doc_hash, section_path, tags, extras)
    record = DocumentRecord(
        collection=collection,
        source=source,
        path=f"/corpus/{source}",
        doc_hash=doc_hash,
        size=len(body.encode()),
        mtime_ns=1_700_000_000_000_000_000 + revision,
        title=title if title is not None else source,
        format=fmt,
        chunk_count=len(chunks),
        char_count=len(body),
        pages=None,
        ingested_at="2024-05-01T12:00:00Z",
        metadata={"tags": tags, **({"knowhub": {"doc_id": doc_id}} if doc_id else {})},
    )
    # The pipeline indexes and embeds the section path with the text (contextual_text).
    indexed = [f"{section_path}\n{t}" if section_path else t for t in texts]
    if vectors is None:
        vectors = unit_vectors(len(texts), seed)
    return Doc(
        record=record,
        chunks=chunks,
        vectors=np.asarray(vectors, dtype=np.float32),
        tokens=[" ".join(index_tokens(t)) for t in indexed],
        cache_keys=[cache_key(EMBEDDER, t) for t in indexed],
    )


def _chunks(
    body: str,
    texts: Sequence[str],
    doc_hash: str,
    id_base: str,
    section_path: str,
    tags: dict[str, Any],
    extras: list[dict[str, Any]] | None,
) -> list[Chunk]:
    chunks: list[Chunk] = []
    offset = 0
    for index, text in enumerate(texts):
        line_start = body.count("\n", 0, offset) + 1
        extra = extras[index] if extras is not None else {}
        chunks.append(
            Chunk(
                chunk_id=make_chunk_id(id_base, index, text),
                doc_hash=doc_hash,
                index=index,
                text=text,
                section_path=section_path,
                page=None,
                line_start=line_start,
                line_end=line_start + text.count("\n"),
                char_start=offset,
                char_end=offset + len(text),
                language=detect_language(text),
                metadata={**tags, **extra},
            )
        )
        offset += len(text) + 2
    return chunks


def put(store: Store, cid: int, doc: Doc) -> Doc:
    """Write ``doc`` into collection ``cid``; returns it."""
    store.replace_document(cid, doc.record, doc.chunks, doc.vectors, doc.tokens, doc.cache_keys)
    return doc


def new_collection(store: Store, name: str = "docs") -> int:
    """The id of collection ``name`` of the test embedder (:data:`EMBEDDER`, :data:`DIM`)."""
    return store.ensure_collection(name, EMBEDDER, DIM)


def assert_whole(store: Store) -> None:
    """The store reports no orphan, missing or mismatched row."""
    report = store.integrity_report()
    assert report, "integrity_report() must name the checks it ran"
    assert all(count == 0 for count in report.values()), report
