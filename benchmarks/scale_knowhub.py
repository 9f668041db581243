"""knowhub's side of ``benchmarks/scale.py``: build a SQLite collection and time its searches.

Only public paths: documents are written through the store (``DocumentWrite`` +
``replace_documents``), searches go through ``knowhub.query.pipeline.search`` (hybrid) or the
store's dense leg (vector), so this measures whatever the store does today. The query
embedding is left out of every timing: each query's vector is put in the pipeline's
query-vector cache first, and the result cache holds nothing (size 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.scale_corpus import (
    DIM,
    DOC_CHUNKS,
    F32,
    FILTER_TEAM,
    Corpus,
    Truth,
    log,
    team_of,
    timed,
)

from knowhub.config import SearchSettings
from knowhub.models import Chunk, DocumentRecord, Filters
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.providers.stores.base import DocumentWrite, replace_documents
from knowhub.providers.stores.derived.live import IndexOptions, ef_search
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.query.cache import SearchCaches
from knowhub.query.pipeline import Legs, SearchRequest, fuse, search

COLLECTION = "bench"
_DOCS_PER_COMMIT = 20  # 1,000 chunks a commit, like ingest's group commits
FILTER: Filters = {"team": FILTER_TEAM}


def chunk_id(doc_hash: str, i: int) -> str:
    """A chunk id starts with its document's id (the store checks it); the rest is ``i``."""
    return f"{doc_hash[:16]}{i:016x}"


def index_of(chunk: str) -> int:
    return int(chunk[16:], 16)


def build(folder: Path, corpus: Corpus) -> SQLiteStore:
    """A store at ``folder`` holding the corpus as documents of ``DOC_CHUNKS`` chunks."""
    store = SQLiteStore(folder / DB_NAME)
    cid = store.ensure_collection(COLLECTION, HashingEmbedder(DIM).model_id, DIM)
    for start, texts, tokens, vectors in corpus.batches(DOC_CHUNKS * _DOCS_PER_COMMIT):
        writes = [
            _document(
                start + j,
                texts[j : j + DOC_CHUNKS],
                tokens[j : j + DOC_CHUNKS],
                vectors[j : j + DOC_CHUNKS],
            )
            for j in range(0, len(texts), DOC_CHUNKS)
        ]
        errors = [e for e in replace_documents(store, cid, writes) if e is not None]
        if errors:
            raise SystemExit(f"knowhub: write failed: {errors[0]}")
        if (start + len(texts)) % 50_000 < DOC_CHUNKS * _DOCS_PER_COMMIT:
            log(f"  knowhub wrote {start + len(texts):,}/{corpus.n:,}")
    store.refresh_index(cid)  # as an ingest ends: the search index is built and saved
    return store


def _document(first: int, texts: list[str], tokens: list[str], vectors: F32) -> DocumentWrite:
    doc = first // DOC_CHUNKS
    doc_hash = f"{doc:016x}".ljust(64, "0")
    team = team_of(first)
    offsets = np.cumsum([0] + [len(t) + 2 for t in texts])
    chunks = [
        Chunk(
            chunk_id(doc_hash, first + j),
            doc_hash,
            j,
            text,
            "",
            None,
            j + 1,
            j + 1,
            int(offsets[j]),
            int(offsets[j]) + len(text),
            "en",
            {"team": team},
        )
        for j, text in enumerate(texts)
    ]
    record = DocumentRecord(
        COLLECTION,
        f"doc{doc:07d}.md",
        f"/bench/doc{doc:07d}.md",
        doc_hash,
        int(offsets[-1]),
        0,
        f"doc {doc}",
        "markdown",
        len(chunks),
        int(offsets[-1]),
        None,
        "2026-12-01T00:00:00Z",
        {"team": team},
    )
    keys = [f"bench-scale:{first + j}" for j in range(len(texts))]
    return DocumentWrite(record, chunks, vectors, tokens, keys)


class Searcher:
    """Times one store's searches; the caches answer query vectors, never results."""

    def __init__(self, store: SQLiteStore, queries: Sequence[str], vectors: F32) -> None:
        self.store = store
        self.queries, self.vectors = queries, vectors
        self.cid = store.collection_id(COLLECTION) or 0
        self.embedder = HashingEmbedder(DIM)
        self.settings = SearchSettings()
        self.caches = SearchCaches.sized(query_vectors=len(queries) + 16, results=0)
        for query, vector in zip(queries, vectors, strict=True):
            self.caches.query_vectors.put((self.embedder.model_id, query.strip()), vector)

    def vector(self, q: int, filters: Filters) -> list[tuple[int, float]]:
        """The dense leg alone for query ``q``: the store's exact (or ANN) scan, row ids and
        cosines."""
        return self.store.dense_search(self.cid, self.vectors[q], 10, filters)

    def indices(self, found: list[tuple[int, float]]) -> list[int]:
        """Corpus indices of the dense leg's row ids (looked up outside the timing)."""
        rows = self.store.hits([i for i, _ in found])
        return [index_of(rows[i].chunk_id) for i, _ in found if i in rows]

    def hybrid(self, q: int, filters: Filters) -> list[int]:
        query = self.queries[q]
        request = SearchRequest(query, COLLECTION, top_k=10, filters=filters)
        result = search(self.store, self.embedder, self.settings, request, caches=self.caches)
        if result.cache.get("query_embedding") != "hit" or result.cache.get("result") == "hit":
            raise SystemExit(f"knowhub: a cache answered {query!r}: {result.cache}")
        return [index_of(h.chunk_id) for h in result.hits]

    def reference_hybrid(self, query: str, filtered: bool, truth: Truth, row: int) -> list[int]:
        """What hybrid would return with an exact dense leg: the store's lexical leg and
        brute-force neighbours fused by the pipeline's own ``fuse``, in corpus indices."""
        from knowhub.lang import query_tokens

        n = max(self.settings.candidates, 10)
        filters = FILTER if filtered else {}
        lexical = self.store.lexical_search(self.cid, query_tokens(query), n, filters)
        rows = self.store.hits([i for i, _ in lexical])
        lexical_idx = [(index_of(rows[i].chunk_id), s) for i, s in lexical if i in rows]
        ids, scores = truth.of(filtered)
        dense = [(int(i), float(s)) for i, s in zip(ids[row, :n], scores[row, :n], strict=True)]
        return [i for i, _ in fuse(self.settings, Legs(lexical_idx, dense, "en", True))[:10]]


def measure(
    store: SQLiteStore,
    queries: Sequence[str],
    vectors: F32,
    truth: Truth,
    ef_sweep: Sequence[int] = (),
) -> dict[str, Any]:
    """Per mode: CPU and wall ms per query (after one warm-up), result ids, and for the
    hybrid modes the exact-dense reference ids. With an HNSW graph (the collection at least
    ``ann_min_chunks``), ``ann_ef_search`` says the efSearch used, and ``ef_sweep`` holds the
    same measures at each ``store.sqlite.ann_ef_search`` of ``ef_sweep`` (a store opened with
    it; the efSearch it comes to at this size is recorded)."""
    modes = _modes(Searcher(store, queries, vectors), truth)
    options = IndexOptions()
    chunks = sum(c.chunks for c in store.collections() if c.name == COLLECTION)
    if chunks < options.ann_min_chunks:
        return modes
    modes["ann_ef_search"] = ef_search(options, chunks)
    modes["ef_sweep"] = []
    for setting in ef_sweep:
        swept_options = IndexOptions(ann_ef_search=setting)
        swept = SQLiteStore(store.path, swept_options)
        ef = ef_search(swept_options, chunks)
        log(f"  knowhub at efSearch {ef} (store.sqlite.ann_ef_search {setting}):")
        found = _modes(Searcher(swept, queries, vectors), truth)
        modes["ef_sweep"].append({"modes": found | {"ann_ef_search": ef}})
        swept.close()
    return modes


def _modes(searcher: Searcher, truth: Truth) -> dict[str, Any]:
    queries = searcher.queries
    modes: dict[str, Any] = {}
    for mode in ("vector", "vector_filter", "hybrid", "hybrid_filter"):
        filters = FILTER if mode.endswith("_filter") else {}
        if mode.startswith("vector"):
            call = partial(searcher.vector, filters=filters)
            modes[mode] = timed(call, len(queries), searcher.indices)
        else:
            modes[mode] = timed(partial(searcher.hybrid, filters=filters), len(queries))
        if mode.startswith("hybrid"):
            filtered = mode.endswith("_filter")
            modes[mode]["ref_ids"] = [
                searcher.reference_hybrid(queries[q], filtered, truth, q)
                for q in range(len(queries))
            ]
        log(f"  knowhub {mode}: cpu p50 {np.median(modes[mode]['cpu_ms']):.2f} ms")
    return modes
