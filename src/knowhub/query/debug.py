"""Retrieval diagnostics: one search laid bare stage by stage, with no LLM involved.

The final hits, rerank outcome and timings come from :func:`~knowhub.query.pipeline.search`
itself (so the report can never disagree with what a search returns); the legs are then
read again through :func:`~knowhub.query.pipeline.retrieve` to list every candidate. Both
runs share one query-embedding cache, so the query is embedded once, and the result cache
is bypassed, so every stage really runs.
"""

from __future__ import annotations

from typing import Any

from knowhub.config import SearchSettings
from knowhub.lang import query_tokens
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.stores.base import Store
from knowhub.query import crosslingual
from knowhub.query.cache import SearchCaches
from knowhub.query.pipeline import (
    Legs,
    SearchRequest,
    fuse_with_options,
    fusion_weights,
    retrieve,
    search,
)
from knowhub.query.rerank import RerankStage

__all__ = ["dense_decision", "diagnose"]


def diagnose(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    request: SearchRequest,
    rerank: RerankStage | None = None,
) -> dict[str, Any]:
    """Every stage of one search: routing, both legs, fusion, rerank, final hits, timings."""
    caches = SearchCaches.sized(query_vectors=1, results=0)  # embed once; never a cached result
    result = search(store, embedder, settings, request, rerank, caches)
    legs = retrieve(store, embedder, settings, request, caches=caches)
    query = request.query.strip()
    fused, promoted, rows = fuse_with_options(store, settings, legs, query)
    candidates = {i for i, _ in legs.lexical} | {i for i, _ in legs.dense}
    rows |= store.hits(sorted(candidates - rows.keys()))  # those fusion read are kept
    used, reason = dense_decision(settings, embedder, legs.language)
    return {
        "query": query,
        "collection": request.collection,
        "top_k": request.top_k,
        "filters": {k: v if isinstance(v, str) else list(v) for k, v in request.filters.items()},
        "routing": {
            "language": legs.language,
            "tokens": query_tokens(query),
            "dense": {"used": used, "reason": reason, "embedder": embedder.model_id},
            "cross_lingual": _crossing(settings, legs),
        },
        "lexical": _leg(legs.lexical, rows, "score"),
        # Across languages the dense leg ranks by the debiased query; "cosine" stays the
        # query's own (None: found by the debiased search alone).
        "dense": _leg(
            legs.dense,
            rows,
            "cosine" if legs.cosines is None else "debiased",
            None if legs.cosines is None else dict(legs.cosines),
        ),
        "fusion": {
            **_fusion_method(settings, legs),
            "count": len(fused),
            # Put first for defining an option the query names (knowhub.query.options).
            "option_entries": promoted,
            "candidates": _fused(fused, rows, _ranks(legs.lexical), _ranks(legs.dense)),
        },
        "rerank": {**result.rerank.to_dict(), "moves": _moves(result.hits, result.rerank.used)},
        "hits": [hit.to_dict() for hit in result.hits],
        "timings_ms": {stage: round(ms, 3) for stage, ms in result.timings_ms.items()},
    }


def dense_decision(settings: SearchSettings, embedder: Embedder, language: str) -> tuple[bool, str]:
    """Whether the dense leg runs for a query in ``language``, and why (same rule as search)."""
    if settings.dense_weight <= 0:
        return False, "search.dense_weight is 0: lexical search only"
    if embedder.languages is None:
        return True, f"embedder {embedder.model_id} is multilingual"
    if language in embedder.languages:
        return True, f"embedder {embedder.model_id} covers language {language!r}"
    covered = ", ".join(sorted(embedder.languages))
    return False, (
        f"embedder {embedder.model_id} does not cover language {language!r} (only {covered}): "
        "its vectors would only add noise, so lexical search only"
    )


def _leg(
    ranking: list[tuple[int, float]],
    rows: dict[int, Hit],
    score: str,
    cosines: dict[int, float] | None = None,
) -> dict[str, Any]:
    candidates = [
        {"rank": rank, score: round(value, 6), **_where(rows.get(item))}
        for rank, (item, value) in enumerate(ranking, start=1)
    ]
    if cosines is not None:
        for candidate, (item, _) in zip(candidates, ranking, strict=True):
            cosine = cosines.get(item)
            candidate["cosine"] = None if cosine is None else round(cosine, 6)
    return {"count": len(ranking), "candidates": candidates}


def _crossing(settings: SearchSettings, legs: Legs) -> dict[str, Any]:
    """Whether the search crossed languages (knowhub.query.crosslingual), and how."""
    if legs.cosines is None:
        return {"used": False}
    damped = sum(1 for factor in (legs.lexical_factors or {}).values() if factor != 1.0)
    return {
        "used": True,
        "debias": settings.cross_lingual_debias,
        "lexical_weight": settings.cross_lingual_lexical_weight,
        "lexical_damped": damped,
        "sentences": crosslingual.sentences_scored(settings),
        "sentence_weight": settings.cross_lingual_sentence_weight,
        "by_sentences": legs.by_sentences,  # none in a mixed collection (crosslingual.holds)
    }


def _fused(
    fused: list[tuple[int, float]],
    rows: dict[int, Hit],
    lexical_rank: dict[int, int],
    dense_rank: dict[int, int],
) -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "score": round(score, 6),
            **_where(rows.get(item)),
            "lexical_rank": lexical_rank.get(item),
            "dense_rank": dense_rank.get(item),
        }
        for rank, (item, score) in enumerate(fused, start=1)
    ]


def _fusion_method(settings: SearchSettings, legs: Legs) -> dict[str, Any]:
    if settings.fusion == "rrf":
        return {"method": "rrf", "rrf_k": settings.rrf_k}
    base = fusion_weights(settings, legs)
    live = {
        leg: w
        for leg, w in base.items()
        if w > 0 and (legs.dense if leg == "dense" else legs.lexical)
    }
    total = sum(live.values()) or 1.0
    # The weights actually applied: renormalised over the legs that answered.
    return {"method": "weighted", "weights": {leg: round(w / total, 6) for leg, w in live.items()}}


def _where(hit: Hit | None) -> dict[str, Any]:
    if hit is None:  # removed between the two runs by a concurrent ingest
        return {"chunk_id": None, "source": None}
    return {"chunk_id": hit.chunk_id, "source": hit.source, "section_path": hit.section_path}


def _moves(hits: list[Hit], reranked: bool) -> list[dict[str, Any]]:
    """Where each final hit was after fusion and where the reranker put it."""
    if not reranked:
        return []
    return [
        {
            "chunk_id": hit.chunk_id,
            "fused_rank": hit.fused_rank,
            "rank": rank,
            "rerank_score": None if hit.rerank_score is None else round(hit.rerank_score, 6),
        }
        for rank, hit in enumerate(hits, start=1)
    ]


def _ranks(ranking: list[tuple[int, float]]) -> dict[int, int]:
    return {item: rank for rank, (item, _) in enumerate(ranking, start=1)}
