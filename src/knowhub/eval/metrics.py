"""Ranking metrics over one query, as small pure functions (graded relevance), and percentiles.

nDCG follows Järvelin & Kekäläinen (2002) with the linear gain used by trec_eval
and BEIR: DCG@k = Σ_i rel_i / log2(i + 1), i from 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "citation_scores",
    "hit_rate_at",
    "keyword_recall",
    "latency_summary",
    "means",
    "mrr_at",
    "ndcg_at",
    "percentile",
    "recall_at",
    "said",
]


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


def hit_rate_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """1.0 when any relevant document is in the top ``k`` (trec_eval's ``success@k``)."""
    return 1.0 if any(relevant.get(doc, 0) > 0 for doc in ranked[:k]) else 0.0


def keyword_recall(keywords: Sequence[str], texts: Sequence[str]) -> float:
    """Share of ``keywords`` found in ``texts`` (case-insensitive, whitespace collapsed)."""
    if not keywords:
        return 0.0
    haystack = _normal(" \n ".join(texts))
    return sum(_normal(word) in haystack for word in keywords) / len(keywords)


def said(phrases: Sequence[str], text: str) -> list[str]:
    """The ``phrases`` that ``text`` contains (as :func:`keyword_recall` finds them)."""
    haystack = _normal(text)
    return [phrase for phrase in phrases if _normal(phrase) in haystack]


def citation_scores(cited: Sequence[str], expected: Sequence[str]) -> tuple[float, float]:
    """(precision, recall) of the sources an answer cites against those it should cite,
    over distinct sources. Citing nothing scores 0 on both: the answer backs no claim."""
    got, want = set(cited), set(expected)
    if not got or not want:
        return 0.0, 0.0
    right = len(got & want)
    return right / len(got), right / len(want)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile with linear interpolation (numpy's default); 0.0 if empty."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def means(rows: Sequence[Mapping[str, float]], names: Sequence[str]) -> dict[str, float]:
    """The mean of each of ``names`` over the rows that have it (in ``names``' order)."""
    out = {}
    for name in names:
        values = [row[name] for row in rows if name in row]
        if values:
            out[name] = sum(values) / len(values)
    return out


def latency_summary(rows: Sequence[Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """p50/p95 of each stage over the rows that have it (ms), ``total`` last."""
    stages: dict[str, list[float]] = {}
    for row in rows:
        for stage, ms in row.items():
            stages.setdefault(stage, []).append(ms)
    total = stages.pop("total", [])
    ordered = {**stages, "total": total} if total else stages
    return {
        stage: {"p50": round(percentile(v, 50), 3), "p95": round(percentile(v, 95), 3)}
        for stage, v in ordered.items()
    }


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())
