"""Our ranking metrics equal trec_eval's (through pytrec_eval) on random graded rankings."""

from __future__ import annotations

import random

import pytest
import pytrec_eval

from knowhub.eval.metrics import hit_rate_at, mrr_at, ndcg_at, recall_at

QUERIES = 300


def random_case(rng: random.Random) -> tuple[dict[str, int], list[str]]:
    pool = [f"d{i}" for i in range(40)]
    judged = rng.sample(pool, rng.randint(1, 15))
    qrels = {doc: rng.choice((0, 1, 1, 2, 3)) for doc in judged}
    qrels[judged[0]] = rng.randint(1, 3)  # at least one relevant document
    ranking = rng.sample(pool, rng.randint(1, len(pool)))
    return qrels, ranking


def as_run(ranking: list[str]) -> dict[str, float]:
    # Distinct descending scores, so trec_eval's order is exactly ours.
    return {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}


def test_metrics_equal_trec_eval_on_random_graded_rankings() -> None:
    rng = random.Random(20240611)
    cases = {f"q{i}": random_case(rng) for i in range(QUERIES)}
    qrels = {qid: judged for qid, (judged, _) in cases.items()}
    full = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "recall.10", "recall.100", "success.10"}
    ).evaluate({qid: as_run(ranking) for qid, (_, ranking) in cases.items()})
    # trec_eval's recip_rank has no cutoff: give it the top 10 only for MRR@10.
    top10 = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(
        {qid: as_run(ranking[:10]) for qid, (_, ranking) in cases.items()}
    )
    assert len(full) == QUERIES
    for qid, (judged, ranking) in cases.items():
        expected = full[qid]
        assert ndcg_at(ranking, judged, 10) == pytest.approx(expected["ndcg_cut_10"], abs=1e-9)
        assert recall_at(ranking, judged, 10) == pytest.approx(expected["recall_10"], abs=1e-9)
        assert recall_at(ranking, judged, 100) == pytest.approx(expected["recall_100"], abs=1e-9)
        assert hit_rate_at(ranking, judged, 10) == pytest.approx(expected["success_10"], abs=1e-9)
        assert mrr_at(ranking, judged, 10) == pytest.approx(top10[qid]["recip_rank"], abs=1e-9)
