"""The rerank stage's reorder logic and failure handling, with deterministic fake rerankers."""

from __future__ import annotations

import pytest

from knowhub import ConfigError, ProviderError
from knowhub.providers.rerankers.base import Reranker
from knowhub.query.rerank import RerankOutcome, RerankStage, reorder
from tests.reranking import (
    BlockedReranker,
    BrokenReranker,
    OverlapReranker,
    hits_for,
)

TEXTS = ["cafeteria lunch menu", "backup schedule", "database backup schedule every six hours"]
QUERY = "database backup schedule"


class Fixed(Reranker):
    model_id = "fake:fixed"

    def __init__(self, scores: list[float]) -> None:
        self.scores = scores

    def _score(self, query: str, texts: list[str]) -> list[float]:
        return self.scores


def test_reorder_sorts_by_rerank_score_and_keeps_fused_facts() -> None:
    hits = hits_for(TEXTS)
    reordered = reorder(hits, [0.1, 0.5, 0.9])
    assert [h.text for h in reordered] == [TEXTS[2], TEXTS[1], TEXTS[0]]
    assert [h.fused_rank for h in reordered] == [3, 2, 1]
    assert [h.fused_score for h in reordered] == [h.fused_score for h in reversed(hits)]
    assert [h.rerank_score for h in reordered] == [0.9, 0.5, 0.1]
    assert [h.score for h in reordered] == [0.9, 0.5, 0.1]  # score = what ordered the list


def test_reorder_ties_keep_the_fused_order() -> None:
    reordered = reorder(hits_for(TEXTS), [1.0, 2.0, 1.0])
    assert [h.fused_rank for h in reordered] == [2, 1, 3]


def test_reorder_rejects_a_score_count_mismatch() -> None:
    with pytest.raises(ValueError, match="2 scores for 3 hits"):
        reorder(hits_for(TEXTS), [1.0, 2.0])


def test_stage_reorders_by_the_rerankers_scores() -> None:
    fake = OverlapReranker()
    hits, outcome = RerankStage(fake, "fake")(QUERY, hits_for(TEXTS))
    assert [h.fused_rank for h in hits] == [3, 2, 1]
    assert outcome.used and outcome.error is None and outcome.provider == "fake"
    assert fake.calls == [(QUERY, TEXTS)]


def test_window_covers_top_k_even_above_candidates() -> None:
    stage = RerankStage(OverlapReranker(), "fake", candidates=20)
    assert (stage.window(5), stage.window(50)) == (20, 50)


def test_failing_reranker_keeps_the_fused_order_and_says_why() -> None:
    hits = hits_for(TEXTS)
    kept, outcome = RerankStage(BrokenReranker(), "fake")(QUERY, hits)
    assert kept == hits
    assert outcome == RerankOutcome(
        "fake", False, "reranker fake:broken failed: CUDA out of memory (pretend)", outcome.ms
    )


def test_timeout_keeps_the_fused_order() -> None:
    blocked = BlockedReranker()
    hits = hits_for(TEXTS)
    try:
        kept, outcome = RerankStage(blocked, "slow", timeout_s=0.05)(QUERY, hits)
    finally:
        blocked.release.set()
    assert kept == hits and not outcome.used
    assert outcome.error == "reranker timed out after 0.05 s (reranker.timeout_s)"
    assert outcome.ms >= 50


def test_missing_extra_during_scoring_keeps_the_fused_order() -> None:
    class NeedsExtra(Reranker):
        model_id = "fake:extra"

        def _score(self, query: str, texts: list[str]) -> list[float]:
            raise ConfigError("needs extra 'st': pip install 'knowhub[st]'")

    hits = hits_for(TEXTS)
    kept, outcome = RerankStage(NeedsExtra(), "fake")(QUERY, hits)
    assert kept == hits and outcome.error is not None and "knowhub[st]" in outcome.error


def test_no_hits_means_no_call() -> None:
    fake = OverlapReranker()
    hits, outcome = RerankStage(fake, "fake")(QUERY, [])
    assert hits == [] and fake.calls == [] and not outcome.used and outcome.error is None


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([1.0, 2.0], "returned 2 scores for 3 passages"),
        ([1.0, float("nan"), 2.0], "non-finite score"),
        ([1.0, float("inf"), 2.0], "non-finite score"),
    ],
)
def test_base_validates_what_a_backend_returns(scores: list[float], message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        Fixed(scores).score(QUERY, TEXTS)


def test_base_wraps_backend_exceptions_naming_the_model() -> None:
    with pytest.raises(ProviderError, match=r"reranker fake:broken failed: CUDA") as caught:
        BrokenReranker().score(QUERY, TEXTS)
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_base_skips_the_backend_for_no_texts() -> None:
    fake = OverlapReranker()
    assert fake.score(QUERY, []) == [] and fake.calls == []
