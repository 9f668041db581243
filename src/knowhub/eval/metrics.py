"""Ranking metrics over one query, as small pure functions (graded relevance).

nDCG follows Järvelin & Kekäläinen (2002) with the linear gain used by trec_eval
and BEIR: DCG@k = Σ_i rel_i / log2(i + 1), i from 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["mrr_at", "ndcg_at", "recall_at"]


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    positives = {doc for doc, gain in relevant.items() if gain > 0}
    return len(positives & set(ranked[:k])) / len(positives) if positives else 0.0


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    return next((1 / (i + 1) for i, doc in enumerate(ranked[:k]) if relevant.get(doc, 0) > 0), 0.0)
