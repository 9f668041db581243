"""An answer run's report: every metric, the violations and the cases that fell short, in
report.md and report.html; its baseline deltas name the cases newly short."""

from __future__ import annotations

from pathlib import Path

from knowhub.eval.answers import AnswerRun, CaseResult
from knowhub.eval.golden import AnswerCase
from knowhub.eval.html import render_html
from knowhub.eval.report import compare, render_markdown


def case(qid: str, problems: list[str], faithful: float = 1.0) -> CaseResult:
    metrics = {"hit_type_accuracy": float(not problems), "faithfulness": faithful}
    latency = {"first_token": 4.0, "total": 9.0}
    answer = CaseResult(
        AnswerCase(qid, f"<{qid}>?", 1, "rag"), "rag", "A [1].", [], metrics, latency
    )
    answer.problems, answer.violations = problems, ["90 days"] if problems else []
    return answer


def answers(*cases: CaseResult) -> dict[str, object]:
    return AnswerRun("golden-answers", Path("g.json"), "default", list(cases)).to_dict()


def test_markdown_and_html_show_metrics_violations_and_short_cases() -> None:
    report = answers(case("ok", []), case("bad", ["said '90 days'"], 0.5))
    markdown = render_markdown(report)
    assert "2 cases answered from collection `default`" in markdown
    assert "| hit_type_accuracy | 0.5000 |" in markdown and "| faithfulness | 0.7500 |" in markdown
    assert "| first_token | 4.0 | 4.0 |" in markdown
    assert "must_not_say violations: 1." in markdown
    assert "- `bad` '<bad>?': said '90 days'" in markdown and "`ok`" not in markdown
    html = render_html(report)
    assert "2 cases answered" in html and "top " not in html
    assert html.index("&lt;bad&gt;?") < html.index("&lt;ok&gt;?")  # short cases first
    assert '<tr class="miss"><td>bad</td>' in html


def test_a_baseline_names_the_cases_newly_short_and_newly_fixed() -> None:
    before = answers(case("a", []), case("b", ["missing keyword 'x'"]))
    after = answers(case("a", ["said 'y'"]), case("b", []))
    deltas = compare(after, before, Path("base.json"))
    assert deltas["newly_missed"] == ["a"] and deltas["newly_found"] == ["b"]
    assert deltas["metrics"]["hit_type_accuracy"]["delta"] == 0.0


def test_groups_are_tabled_and_a_maximum_is_shown_as_one() -> None:
    near = case("n", [])
    near.case = AnswerCase("n", "<n>?", 1, "insufficient_context", group="near")
    near.metrics = {"near_miss_refused": 1.0}
    placed = case("p", [])
    placed.metrics = {"source_first": 1.0, "right_place": 0.0, "answerable_refused": 1.0}
    report = answers(placed, near)
    report["gate"] = {"key": "g", "passed": False, "failures": [], "thresholds": {
        "answerable_refused": 0.05, "source_first": 0.9}}  # fmt: skip
    markdown = render_markdown(report)
    assert "| answerable_refused | 1.0000 |  |  | ≤ 0.050 ❌ |" in markdown
    assert "| source_first | 1.0000 |  |  | ≥ 0.900 ✅ |" in markdown
    assert "| golden-answers | 1 | 1 | 1.000 | 0.000 | – | – | 1.000 |" in markdown
    assert "| near | 1 | 0 | – | – | – | 1.000 | – |" in markdown
    html = render_html(report)
    assert "<h2>Groups</h2>" in html and "<td>near</td>" in html and "gate maximum" in html
