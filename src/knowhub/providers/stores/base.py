"""The store contract every backend keeps (SQLite embedded; scale-out backends follow it).

A store holds collections; each collection holds documents, their chunks (text, citation
spans, metadata), one vector per chunk and a lexical index over our own per-language tokens,
plus FAQ entries. Chunk rows have integer ids that both search legs return and
:meth:`Store.hits` resolves. Every write of a document is atomic: readers see the old
version or the new one, never a mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from knowhub.errors import StoreError
from knowhub.models import Chunk, DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Vectors

__all__ = [
    "CollectionInfo",
    "DocumentWrite",
    "FaqEntry",
    "GroupWriter",
    "IndexRefresher",
    "Orphan",
    "Store",
    "StoredChunk",
    "change_meta",
    "check_embedder",
    "checked_meta_key",
    "checked_vectors",
    "moved_paths",
    "one_by_one",
    "refresh_index",
    "replace_documents",
]


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    embedder: str
    dim: int
    version: int
    documents: int
    chunks: int
    created_at: str
    lexical_chunks: int  # rows in the lexical index: equal to ``chunks`` when it is whole


@dataclass(frozen=True)
class DocumentWrite:
    """The arguments of one :meth:`Store.replace_document`."""

    record: DocumentRecord
    chunks: Sequence[Chunk]
    vectors: Vectors
    tokens: Sequence[str]
    cache_keys: Sequence[str]
    previous: str | None = None


@runtime_checkable
class GroupWriter(Protocol):
    """A store that commits several documents' writes at once, each still all or nothing."""

    def replace_documents(
        self, cid: int, writes: Sequence[DocumentWrite]
    ) -> list[Exception | None]:
        """Apply each write as :meth:`Store.replace_document` would, in one commit; returns
        each write's error (that write alone left out), or None. Raises when the commit
        itself fails (then none of them is written)."""


def replace_documents(
    store: Store, cid: int, writes: Sequence[DocumentWrite]
) -> list[Exception | None]:
    """Write several documents: in one commit where the store can, else one by one."""
    if isinstance(store, GroupWriter):
        return store.replace_documents(cid, writes)
    return one_by_one(store, cid, writes)


def one_by_one(store: Store, cid: int, writes: Sequence[DocumentWrite]) -> list[Exception | None]:
    """Each write as its own :meth:`Store.replace_document`; each one's error, or None."""
    errors: list[Exception | None] = []
    for w in writes:
        try:
            store.replace_document(
                cid, w.record, w.chunks, w.vectors, w.tokens, w.cache_keys, w.previous
            )
        except Exception as exc:  # the caller reports each document's failure
            errors.append(exc)
        else:
            errors.append(None)
    return errors


@runtime_checkable
class IndexRefresher(Protocol):
    """A store whose search index is derived from its rows, and worth bringing up to date
    (and persisting) once a batch of writes is done, rather than by the next search."""

    def refresh_index(self, cid: int) -> None: ...


def refresh_index(store: Store, cid: int) -> None:
    """Let the store bring its derived search index up to date, if it has one."""
    if isinstance(store, IndexRefresher):
        store.refresh_index(cid)


@dataclass(frozen=True)
class FaqEntry:
    source: str
    question: str
    answer: str
    line: int
    vector: Vectors


@dataclass(frozen=True)
class StoredChunk:
    """One chunk of a document as the store holds it in each leg (verify and export read it).

    ``vector`` is None when the dense leg has no vector for the chunk, ``tokens`` None when
    the lexical leg has no row for it (both present in a whole store).
    """

    chunk: Chunk
    vector: Vectors | None
    tokens: str | None


@dataclass(frozen=True)
class Orphan:
    """A row no document owns: ``kind`` is ``chunk`` (a chunk whose document is gone),
    ``lexical`` or ``vector`` (an index row whose chunk is gone); ``key`` names it."""

    kind: str
    key: str


@runtime_checkable
class Store(Protocol):
    # -- collections
    def ensure_collection(self, name: str, embedder: str, dim: int) -> int:
        """The collection's id, creating it; a different embedder or dim is a StoreError."""

    def collection_id(self, name: str) -> int | None: ...
    def collections(self) -> list[CollectionInfo]: ...
    def version(self, cid: int) -> int:
        """Bumped by every write to the collection (keys the result cache)."""

    def embedder_of(self, cid: int) -> tuple[str, int]: ...
    def drop_collection(self, cid: int) -> None:
        """Delete the collection and all it holds (documents, chunks, both index legs, FAQ)
        atomically; unknown ids are ignored. Its id is never given to another collection,
        so caches keyed by (id, version) cannot serve a dropped collection's rows."""

    # -- metadata: small values shared by every process using the store (see versions.py)
    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key`` (``namespace:name``), or None."""

    def set_meta(self, key: str, value: str | None, expected: str | None) -> bool:
        """Compare-and-set: store ``value`` under ``key`` (None deletes it) only if the key
        still holds ``expected`` (None: absent), in one atomic write; False, writing
        nothing, when another writer changed it first."""

    # -- documents
    def record(self, cid: int, path: str) -> DocumentRecord | None: ...
    def records(self, cid: int) -> list[DocumentRecord]: ...
    def find_records(self, cid: int, path_or_source: str) -> list[DocumentRecord]:
        """Documents whose path or source equals ``path_or_source`` exactly."""

    def find_by_hash_prefix(self, cid: int, prefix: str) -> list[DocumentRecord]:
        """Documents whose doc_hash starts with ``prefix``, compared as plain text: never
        a LIKE/GLOB pattern, so ``_ % * [ \\`` match only themselves (that is, nothing);
        an empty prefix matches nothing. Callers check the prefix
        (:func:`knowhub.checks.check_doc_hash_prefix`)."""

    def touch(self, cid: int, path: str, size: int, mtime_ns: int) -> None: ...
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
        """Swap a document's old chunks for ``chunks`` atomically (``tokens``: one string of
        space-separated lexical terms per chunk; ``cache_keys``: embedding-cache keys).

        ``previous``: the path the document was recorded under before it moved to
        ``record.path``; that record and its chunks go in the same write, so readers see
        the document at one path or the other, never at both or neither."""

    def remove_document(self, cid: int, path: str) -> bool: ...
    def stored_chunks(self, cid: int, path: str) -> list[StoredChunk]:
        """The document's chunks in index order, each with its vector and lexical tokens
        (empty when the document is unknown)."""

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, Vectors]: ...
    def cache_vectors(self, keys: Sequence[str], vectors: Vectors) -> None:
        """Keep ``vectors`` (a row per key) under their embedding-cache ``keys``, with no
        document holding them: what a stopped ingest computed. A key already cached keeps
        its vector (a key is of one model and one text)."""

    # -- search
    def lexical_search(
        self, cid: int, tokens: Sequence[str], limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """BM25-style: (chunk row id, score, higher is better), best first."""

    def dense_search(
        self, cid: int, query: Vectors, limit: int, filters: Filters
    ) -> list[tuple[int, float]]:
        """(chunk row id, cosine similarity), best first."""

    def hits(self, ids: Sequence[int]) -> dict[int, Hit]: ...
    def chunk_sources(self, cid: int) -> dict[int, str]: ...
    def chunks_by_id(self, chunk_id: str) -> list[Hit]: ...

    # -- FAQ
    def replace_faq(
        self, cid: int, source: str, entries: Sequence[tuple[str, str, int]], vectors: Vectors
    ) -> None: ...
    def faq(self, cid: int) -> list[FaqEntry]: ...
    def remove_faq(self, cid: int, source: str) -> int: ...

    # -- health
    def integrity_report(self) -> dict[str, int]:
        """Counts of inconsistencies (orphans, missing index rows…); all zero when whole."""

    def orphans(self, cid: int) -> list[Orphan]:
        """The collection's rows that no document owns (empty when whole)."""

    def remove_orphans(self, cid: int) -> int:
        """Delete what :meth:`orphans` lists, atomically; how many rows went."""

    def close(self) -> None: ...


def checked_meta_key(key: str) -> str:
    """``key`` if it is namespaced (``versions:handbook``): keys without a ``:`` are the
    store's own (``schema_version``) and never reachable through ``set_meta``."""
    if ":" not in key.strip(":"):
        raise StoreError(f"meta key {key!r} has no namespace: use 'namespace:name'")
    return key


def checked_vectors(
    record: DocumentRecord,
    chunks: Sequence[Chunk],
    vectors: Vectors,
    tokens: Sequence[str],
    cache_keys: Sequence[str],
    embedder: str,
    dim: int,
) -> Vectors:
    """What every backend checks before ``replace_document`` writes: one vector, token string
    and cache key per chunk, each vector of the collection's dimension. Returns the vectors
    as a float32 ``(len(chunks), dim)`` array."""
    if not (len(chunks) == len(vectors) == len(tokens) == len(cache_keys)):
        raise StoreError("replace_document: chunks, vectors, tokens and keys differ in length")
    if chunks and np.shape(vectors)[1:] != (dim,):
        # Stored silently, they would break every later dense search of the collection.
        raise StoreError(
            f"replace_document: {record.source}: vectors have shape {np.shape(vectors)}, "
            f"but the collection holds {embedder} vectors of dim {dim}: embed with {embedder}"
        )
    return np.asarray(vectors, dtype=np.float32).reshape(len(chunks), dim)


def check_embedder(name: str, built: tuple[str, int], embedder: str, dim: int) -> None:
    """What every backend's ``ensure_collection`` checks of an existing collection: that it
    was built with the configured embedder (``built``: its embedder id and dimension)."""
    if tuple(built) != (embedder, dim):
        raise StoreError(
            f"collection {name!r} was built with embedder {built[0]} (dim {built[1]}), "
            f"but {embedder} (dim {dim}) is configured: switch back, or ingest into "
            "a new collection with --collection"
        )


def moved_paths(record: DocumentRecord, previous: str | None) -> list[str]:
    """The paths whose records a ``replace_document`` of ``record`` replaces: its own, and
    the one it moved from."""
    return [record.path] if previous in (None, record.path) else [record.path, str(previous)]


def change_meta(
    store: Store, key: str, change: Callable[[str | None], str | None], tries: int = 5
) -> None:
    """Store ``change(value)`` under ``key`` by compare-and-set (None deletes it), reading it
    again while another writer changes it first; a StoreError after ``tries`` rounds."""
    for _ in range(tries):
        raw = store.get_meta(key)
        if store.set_meta(key, change(raw), raw):
            return
    raise StoreError(f"{key}: written by another run during each of {tries} tries")
