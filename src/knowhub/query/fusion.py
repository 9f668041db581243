"""Rank fusion, as small pure functions.

Both take per-leg rankings ``[(item_id, score), …]`` ordered best first and
return ``[(item_id, fused_score), …]`` ordered best first (ties by id).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["min_max", "reciprocal_rank_fusion", "weighted_fusion"]

K = TypeVar("K", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[tuple[K, float]]],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
    factors: Mapping[str, Mapping[K, float]] | None = None,
) -> list[tuple[K, float]]:
    """RRF: score(d) = Σ_legs w_leg · f_leg(d) / (k + rank_leg(d)), ranks from 1; ``factors``
    gives some items of a leg a factor f (1 for the rest).

    Cormack, Clarke & Büttcher (2009), "Reciprocal rank fusion outperforms
    Condorcet and individual rank learning methods", SIGIR.
    """
    fused: dict[K, float] = {}
    for leg, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        if weight == 0:
            continue
        factor = (factors or {}).get(leg, {})
        for rank, (item, _score) in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + weight * factor.get(item, 1.0) / (k + rank)
    return _ordered(fused)


def min_max(ranking: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Scale a leg's scores to [0, 1]; a leg whose scores are all equal maps to 1."""
    if not ranking:
        return {}
    scores = [s for _, s in ranking]
    low, high = min(scores), max(scores)
    span = high - low
    return {item: (score - low) / span if span > 0 else 1.0 for item, score in ranking}


def weighted_fusion(
    rankings: Mapping[str, Sequence[tuple[K, float]]],
    weights: Mapping[str, float],
    factors: Mapping[str, Mapping[K, float]] | None = None,
) -> list[tuple[K, float]]:
    """Convex combination of min-max normalised scores (a leg missing an item gives 0);
    ``factors`` scales some items' normalised scores in a leg (1 for the rest).

    The "CombSUM with min-max normalisation" of Fox & Shaw (1994), as compared by
    Bruch, Gai & Ingber (2023), "An analysis of fusion functions for hybrid retrieval".
    """
    fused: dict[K, float] = {}
    for leg, ranking in rankings.items():
        weight = weights.get(leg, 0.0)
        if weight == 0:
            continue
        factor = (factors or {}).get(leg, {})
        for item, score in min_max(ranking).items():
            fused[item] = fused.get(item, 0.0) + weight * score * factor.get(item, 1.0)
    return _ordered(fused)


def _ordered(fused: Mapping[K, float]) -> list[tuple[K, float]]:
    return sorted(fused.items(), key=lambda kv: (-kv[1], str(kv[0])))
