"""Hybrid search: validate → language → dense ‖ lexical (filters inside both) → fuse → cut."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from knowhub.config import SearchSettings
from knowhub.errors import QueryError
from knowhub.lang import detect_language, query_tokens
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.stores.sqlite import SQLiteStore
from knowhub.query.fusion import reciprocal_rank_fusion, weighted_fusion
from knowhub.validate import check_collection_name, check_min_score, check_query, check_top_k

__all__ = ["Legs", "SearchRequest", "SearchResult", "fuse", "retrieve", "search"]


@dataclass(frozen=True)
class SearchRequest:
    query: str
    collection: str
    top_k: int = 5
    filters: Mapping[str, str] = field(default_factory=dict)
    min_score: float = 0.0
    max_top_k: int = 100


@dataclass
class SearchResult:
    """Hits plus what it took to find them (the seed of a trace)."""

    hits: list[Hit]
    language: str
    dense_used: bool
    timings_ms: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hits": [h.to_dict() for h in self.hits],
            "language": self.language,
            "dense_used": self.dense_used,
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            "counts": self.counts,
        }


@dataclass
class Legs:
    """What each retriever returned: ``[(chunk row id, score), …]`` best first."""

    lexical: list[tuple[int, float]]
    dense: list[tuple[int, float]]
    language: str
    dense_used: bool


def search(
    store: SQLiteStore, embedder: Embedder, settings: SearchSettings, request: SearchRequest
) -> SearchResult:
    """Run one hybrid search and return the cut, cited hits."""
    timings: dict[str, float] = {}
    legs = retrieve(store, embedder, settings, request, timings)
    clock = time.perf_counter()
    fused = fuse(settings, legs)
    fused = [(i, s) for i, s in fused if s >= request.min_score][: request.top_k]
    rows = store.hits([i for i, _ in fused])
    lexical_rank = {item: r for r, (item, _) in enumerate(legs.lexical, start=1)}
    dense_rank = {item: r for r, (item, _) in enumerate(legs.dense, start=1)}
    hits = [
        replace(rows[i], score=s, lexical_rank=lexical_rank.get(i), dense_rank=dense_rank.get(i))
        for i, s in fused
        if i in rows
    ]
    timings["fusion"] = _lap(clock)
    counts = {"lexical": len(legs.lexical), "dense": len(legs.dense), "hits": len(hits)}
    return SearchResult(hits, legs.language, legs.dense_used, timings, counts)


def retrieve(
    store: SQLiteStore,
    embedder: Embedder,
    settings: SearchSettings,
    request: SearchRequest,
    timings: dict[str, float] | None = None,
) -> Legs:
    """Validate the request and run both legs, each with the filters applied inside it."""
    timings = {} if timings is None else timings
    query = check_query(request.query)
    check_top_k(request.top_k, request.max_top_k)
    check_min_score(request.min_score)
    cid = store.collection_id(check_collection_name(request.collection))
    if cid is None:
        known = ", ".join(c.name for c in store.collections()) or "none yet"
        raise QueryError(
            f"unknown collection {request.collection!r} (known: {known}); ingest into it first"
        )
    clock = time.perf_counter()
    language = detect_language(query)
    tokens = query_tokens(query)
    # An embedder that does not know the query's language would only add noise.
    dense_used = settings.dense_weight > 0 and (
        embedder.languages is None or language in embedder.languages
    )
    timings["routing"] = _lap(clock)
    n = max(settings.candidates, request.top_k)

    clock = time.perf_counter()
    lexical = store.lexical_search(cid, tokens, n, request.filters)
    timings["lexical"] = _lap(clock)
    dense: list[tuple[int, float]] = []
    if dense_used:
        clock = time.perf_counter()
        vector = embedder.embed_query(query)
        timings["query_embedding"] = _lap(clock)
        clock = time.perf_counter()
        dense = store.dense_search(cid, vector, n, request.filters)
        timings["dense"] = _lap(clock)
    return Legs(lexical, dense, language, dense_used)


def fuse(settings: SearchSettings, legs: Legs) -> list[tuple[int, float]]:
    """Fuse the legs as configured: weighted min-max scores (default) or RRF."""
    base = {"dense": settings.dense_weight, "lexical": 1.0 - settings.dense_weight}
    rankings = {"lexical": legs.lexical, "dense": legs.dense}
    live = {leg: ranking for leg, ranking in rankings.items() if ranking and base[leg] > 0}
    if not live:
        return []
    if settings.fusion == "rrf":
        return reciprocal_rank_fusion(live, k=settings.rrf_k)
    total = sum(base[leg] for leg in live)
    # Weights renormalised over the legs that answered, so scores stay in [0, 1].
    return weighted_fusion(live, {leg: base[leg] / total for leg in live})


def _lap(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
