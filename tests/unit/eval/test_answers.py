"""Answer evaluation on a real App (hashing embedder, extractive answers, an FAQ): each
expectation scored, problems named, latency measured, expected sources checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App
from knowhub.errors import ConfigError
from knowhub.eval.answers import AnswerRun, Scoring, check_sources, run_answers
from knowhub.eval.golden import AnswerCase
from tests.helpers import write

GUIDE = (
    "# Backups\n\nIncremental database backups run every 6 hours. Nightly full backups are "
    "kept for 35 days.\n\n# Upgrades\n\nYou may skip at most one minor version when upgrading "
    "Fleetdeck; from 4.1 you must go through 4.3 to reach 4.4.\n"
)
FAQ = "question,answer\nWho runs the help desk?,The help desk is run by Dana Ortiz.\n"


@pytest.fixture
def handbook(app: App, tmp_path: Path) -> App:
    app.collection("handbook").ingest([write(tmp_path / "docs" / "guide.md", GUIDE)])
    app.collection("handbook").faq_import([write(tmp_path / "faq.csv", FAQ)])
    return app


def run(app: App, *cases: AnswerCase) -> AnswerRun:
    scoring = Scoring(app.settings.answer.verification, app.collection("handbook").embedder)
    results = run_answers(app.collection("handbook"), cases, scoring)
    return AnswerRun("golden", Path("golden.json"), "handbook", results)


def test_a_cited_answer_scores_every_expectation(handbook: App) -> None:
    case = AnswerCase(
        "rag", "How often do incremental database backups run?", 3, "rag",
        ("every 6 hours",), ("guide.md",), ("every 12 hours",),
    )  # fmt: skip
    (result,) = run(handbook, case).cases
    assert result.hit_type == "rag" and result.cited == ["guide.md"], result.answer
    assert result.metrics == {
        "hit_type_accuracy": 1.0,
        "answerable_refused": 0.0,
        "answer_keyword_recall": 1.0,
        "keywords_present": 1.0,
        "must_not_say_compliance": 1.0,
        "citation_precision": 1.0,
        "citation_recall": 1.0,
        "source_first": 1.0,
        "faithfulness": 1.0,
    }
    assert result.problems == [] and result.violations == []
    assert 0 < result.latency_ms["first_token"] <= result.latency_ms["total"]


def test_shortfalls_are_scored_and_named(handbook: App) -> None:
    wrong = AnswerCase(
        "w", "How often do incremental database backups run?", 5, "insufficient_context",
        ("every 6 hours", "hourly"), (), ("6 hours",),
    )  # fmt: skip
    faq = AnswerCase("f", "Who runs the help desk?", 7, "faq_direct", ("Dana Ortiz",))
    refusal = AnswerCase("n", "What is the boiling point of mercury?", 9, "insufficient_context")
    report = run(handbook, wrong, faq, refusal).to_dict()
    first, second, third = report["per_query"]
    assert first["metrics"]["hit_type_accuracy"] == 0.0
    assert first["metrics"]["answer_keyword_recall"] == 0.5
    assert first["metrics"]["must_not_say_compliance"] == 0.0
    assert first["violations"] == ["6 hours"]
    assert first["problems"][:3] == [
        "hit_type rag, expected insufficient_context",
        "missing keyword 'hourly'",
        "said '6 hours'",
    ]
    # An FAQ answer and a refusal used no source: no faithfulness, no citation scores.
    assert second["hit_type"] == "faq_direct" and "faithfulness" not in second["metrics"]
    assert third["hit_type"] == "insufficient_context" and third["problems"] == []
    assert report["metrics"]["hit_type_accuracy"] == pytest.approx(2 / 3)
    assert report["must_not_say_violations"] == 1
    assert set(report["latency_ms"]) == {"first_token", "total"}


def test_citing_the_wrong_source_lowers_precision_and_recall(handbook: App) -> None:
    case = AnswerCase("c", "Can we upgrade Fleetdeck from 4.1 to 4.4?", 2, "rag", (), ("other.md",))
    (result,) = run(handbook, case).cases
    assert result.metrics["citation_precision"] == 0.0 == result.metrics["citation_recall"]
    assert result.problems == ["cites guide.md", "first source guide.md, expected other.md"]


def test_an_expected_source_the_collection_lacks_is_an_error() -> None:
    case = AnswerCase("x", "q", 4, "rag", (), ("guide.md", "gone.md"))
    with pytest.raises(ConfigError, match=r"g.json:4: case 'x': \"expected_sources\" names 'gone"):
        check_sources([case], {"guide.md"}, Path("g.json"), "handbook")
