"""Trust metrics of one answer, on hand-made answers and hits: the first source, the place
cited (section, page), all keywords present, refusals; per group, and gated per group."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from knowhub.answer.citations import CitationReport
from knowhub.answer.events import Answer
from knowhub.config import VerificationSettings
from knowhub.eval.answer_metrics import (
    is_refusal,
    keywords_present,
    place_hit,
    right_place,
    source_first,
)
from knowhub.eval.answers import AnswerRun, Scoring, score_answer
from knowhub.eval.gate import answer_gate
from knowhub.eval.golden import AnswerCase
from knowhub.models import Hit
from knowhub.testing.hits import hit as make_hit


def hit(source: str, section: str = "", page: int | None = None, n: int = 0) -> Hit:
    text = f"Text of {source}."
    return make_hit(
        text,
        chunk_id=f"c_{n}",
        source=source,
        title=source,
        page=page,
        section_path=section,
        line_start=0,
        line_end=0,
        doc_hash="h",
        collection="c",
    )


def answer(
    text: str,
    *hits: Hit,
    cited: tuple[int, ...] = (),
    hit_type: str = "rag",
    not_mentioned: tuple[str, ...] = (),
) -> Answer:
    found = Answer("q", "q", text, hit_type, list(hits), 0.8, 0.8, CitationReport(list(cited)))
    found.not_mentioned = list(not_mentioned)
    return found


CASE = AnswerCase("a", "q", 1, None, ("atrm", "job number"), ("at.1.txt",))


def test_source_first_is_the_answers_first_source_listed_or_used() -> None:
    assert source_first(CASE, answer("x", hit("at.1.txt"), hit("cron.8.txt")))[0] == 1.0
    score, problem = source_first(CASE, answer("x", hit("cron.8.txt"), hit("at.1.txt")))
    assert score == 0.0 and problem == "first source cron.8.txt, expected at.1.txt"
    refused = answer("x", hit("at.1.txt"), hit_type="insufficient_context")
    assert source_first(CASE, refused)[0] == 1.0  # a refusal lists the nearest sources
    assert source_first(CASE, answer("x")) == (0.0, "first source none, expected at.1.txt")


def test_right_place_judges_the_cited_hits_from_an_expected_document() -> None:
    case = replace(CASE, section="options > -d")
    right = hit("at.1.txt", "AT > OPTIONS > -d", n=1)
    wrong = hit("at.1.txt", "AT > DESCRIPTION", n=2)
    other = hit("cron.8.txt", "CRON > Options > -d", n=3)
    # Cited: only the cited hits from an expected document count; any at the place will do.
    assert right_place(case, answer("x", wrong, right, cited=(1, 2)))[0] == 1.0
    assert right_place(case, answer("x", wrong, right, cited=(1,))) == (
        0.0,
        "cites at.1.txt section 'AT > DESCRIPTION', expected section 'options > -d'",
    )
    # Citing only another document at the right section is not the right place.
    assert place_hit(case, answer("x", other, right, cited=(1,))) == []
    assert right_place(case, answer("x", other, right, cited=(1,)))[1] == (
        "cites nothing from an expected source, expected section 'options > -d'"
    )
    # Citing nothing: its first source from an expected document is judged.
    assert place_hit(case, answer("x", other, right, wrong)) == [right]
    assert right_place(case, answer("x", other, wrong, right))[0] == 0.0


def test_right_place_needs_every_place_the_case_gives() -> None:
    pages = replace(CASE, sources=("m.pdf",), pages=(12, 14))
    assert right_place(pages, answer("x", hit("m.pdf", page=14), cited=(1,)))[0] == 1.0
    assert right_place(pages, answer("x", hit("m.pdf", page=15), cited=(1,))) == (
        0.0,
        "cites m.pdf section '' page 15, expected pages 12-14",
    )
    assert right_place(pages, answer("x", hit("m.pdf"), cited=(1,)))[0] == 0.0  # no page
    both = replace(pages, section="2.1  安装", pages=(12, 12))
    assert right_place(both, answer("x", hit("m.pdf", "第二章 > 2.1 安装", 12), cited=(1,)))[0]
    wrong_page = answer("x", hit("m.pdf", "第二章 > 2.1 安装", 13), cited=(1,))
    assert right_place(both, wrong_page)[1] == (
        "cites m.pdf section '第二章 > 2.1 安装' page 13, expected section '2.1  安装' page 12"
    )


def test_keywords_present_needs_all_of_them_case_insensitive() -> None:
    assert keywords_present(CASE, answer("Use ATRM with the Job  Number.")) == 1.0
    assert keywords_present(CASE, answer("Use atrm.")) == 0.0


def test_a_refusal_is_insufficient_context_or_something_not_mentioned() -> None:
    assert is_refusal(answer("x", hit_type="insufficient_context"))
    assert is_refusal(answer("x", not_mentioned=("Kubernetes",)))
    assert not is_refusal(answer("x"))
    assert not is_refusal(answer("x", hit_type="faq_direct"))


def score(case: AnswerCase, found: Answer) -> dict[str, float]:
    scoring = Scoring(VerificationSettings(enabled=False))
    return score_answer(case, found, {"total": 1.0}, scoring).metrics


def test_refusals_are_scored_as_near_misses_or_answerable_questions() -> None:
    near = AnswerCase("n", "q", 1, "insufficient_context", group="near")
    partial = answer("x", hit("at.1.txt"), not_mentioned=("ingress",))
    assert score(near, partial)["near_miss_refused"] == 1.0
    assert score(near, answer("x", hit("at.1.txt")))["near_miss_refused"] == 0.0
    scored = score_answer(CASE, partial, {"total": 1.0}, Scoring(VerificationSettings()))
    assert scored.metrics["answerable_refused"] == 1.0 and "near_miss_refused" not in scored.metrics
    assert "refused an answerable question (rag, not mentioned: ingress)" in scored.problems
    assert scored.to_dict()["not_mentioned"] == ["ingress"] and scored.to_dict()["refused"]


def run_of(*pairs: tuple[AnswerCase, Answer]) -> AnswerRun:
    scoring = Scoring(VerificationSettings(enabled=False))
    cases = [score_answer(case, found, {"total": 1.0}, scoring) for case, found in pairs]
    return AnswerRun("realdocs", Path("golden"), "realdocs", cases)


def test_metrics_are_reported_per_group_the_run_name_for_cases_without_one() -> None:
    run = run_of(
        (replace(CASE, group="en"), answer("atrm job number", hit("at.1.txt"))),
        (replace(CASE, group="en"), answer("atrm", hit("cron.8.txt"))),
        (CASE, answer("no", hit_type="insufficient_context")),
        (AnswerCase("n", "q", 1, "insufficient_context", group="near"), answer("x", hit("a"))),
    )
    report = run.to_dict()
    assert (report["groups"]["en"]["cases"], report["groups"]["en"]["answerable"]) == (2, 2)
    en = report["groups"]["en"]["metrics"]
    assert (en["source_first"], en["keywords_present"], en["answerable_refused"]) == (0.5, 0.5, 0)
    assert report["groups"]["realdocs"]["metrics"]["answerable_refused"] == 1.0
    assert report["groups"]["near"] == {
        "cases": 1,
        "answerable": 0,
        "metrics": {"hit_type_accuracy": 0.0, "near_miss_refused": 0.0},
    }
    assert report["metrics"]["answerable_refused"] == pytest.approx(1 / 3, abs=1e-6)
    assert [case["group"] for case in report["per_query"]] == ["en", "en", "", "near"]


def test_the_gate_checks_each_group_and_refusal_of_answerable_cases_as_a_maximum() -> None:
    run = run_of(
        (replace(CASE, group="en"), answer("atrm job number", hit("at.1.txt"))),
        (replace(CASE, group="en"), answer("no", hit("at.1.txt"), hit_type="insufficient_context")),
        (AnswerCase("n", "q", 1, "insufficient_context", group="near"), answer("x", hit("a"))),
    )
    gates = {
        "realdocs": {"answerable_refused": 0.05},
        "realdocs/en": {"source_first": 0.9, "keywords_present": 0.9},
        "realdocs/near": {"near_miss_refused": 0.9},
    }
    gate = answer_gate(gates, ["golden", "realdocs"], run.metrics, run.groups)
    assert gate is not None and not gate.passed
    assert gate.to_dict()["key"] == "realdocs, realdocs/en, realdocs/near"
    assert gate.to_dict()["failures"] == [
        "answerable_refused 0.500 > 0.050 (+0.450)",
        "en: keywords_present 0.500 < 0.900 (-0.400)",
        "near: near_miss_refused 0.000 < 0.900 (-0.900)",
    ]
    assert gate.to_dict()["groups"]["en"]["thresholds"] == gates["realdocs/en"]
    loose = {"realdocs/en": {"source_first": 1.0, "answerable_refused": 0.5}}
    passed = answer_gate(loose, ["golden", "realdocs"], run.metrics, run.groups)
    assert passed is not None and passed.passed and passed.overall is None
    none = answer_gate({"other": {"source_first": 1.0}}, ["golden"], run.metrics, run.groups)
    assert none is None
