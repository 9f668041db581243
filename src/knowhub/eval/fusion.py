"""nDCG@10 of judged questions at each dense weight, from one retrieval per question.

Each question's two legs are retrieved once (their candidates do not depend on the
weight) and fused at every weight of :data:`knowhub.query.tuning.WEIGHTS`; its hits are
ranked as ``knowhub eval`` ranks them (a document at its best chunk), without a reranker:
the weight decides what reaches it. What ``knowhub calibrate --golden`` chooses from.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from knowhub.config import SearchSettings
from knowhub.errors import QueryError
from knowhub.eval.runner import score_query
from knowhub.eval.sets import JudgedQuery
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.stores.base import Store
from knowhub.query.pipeline import SearchRequest, fuse, retrieve
from knowhub.query.tuning import WEIGHTS
from knowhub.scope import Scope

__all__ = ["sweep"]

CANDIDATES = 100  # per leg, as the fusion tables of docs/benchmarks.md


def sweep(
    store: Store,
    embedder: Embedder,
    settings: SearchSettings,
    where: tuple[str, Scope],
    queries: Sequence[JudgedQuery],
) -> dict[float, float]:
    """Mean nDCG@10 of ``queries`` on collection ``where`` (its store name, the caller's
    scope) at each weight; a question that cannot be searched scores 0 at every one.

    Raises:
        QueryError: no question could be searched (another embedder built the
            collection…): the first one's error.
    """
    collection, scope = where
    wide = settings.model_copy(update={"candidates": max(settings.candidates, CANDIDATES)})
    scores: dict[float, list[float]] = {weight: [] for weight in WEIGHTS}
    failed: list[QueryError] = []
    for query in queries:
        request = SearchRequest(query.text, collection, top_k=CANDIDATES, scope=scope)
        try:
            legs = retrieve(store, embedder, wide.model_copy(update={"dense_weight": 1.0}), request)
        except QueryError as exc:  # an empty or overlong question: as eval scores it
            failed.append(exc)
            for values in scores.values():
                values.append(0.0)
            continue
        rankings = {w: fuse(wide.model_copy(update={"dense_weight": w}), legs) for w in WEIGHTS}
        rows = {item for ranking in rankings.values() for item, _ in ranking}
        hits = store.hits(sorted(rows))
        for weight, ranking in rankings.items():
            ranked = [hits[item] for item, _ in ranking if item in hits]
            scores[weight].append(score_query(query, ranked, {}).metrics["ndcg@10"])
    if failed and len(failed) == len(queries):  # the collection's fault, not the questions'
        raise failed[0]
    return {weight: statistics.fmean(values) for weight, values in scores.items()}
