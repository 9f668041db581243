"""The parts of report.md and report.html that differ for an answer evaluation
(``kind: answers``): its summary line, its groups and its cases, those that fell short first."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

__all__ = [
    "GROUP_COLUMNS",
    "answer_cases_html",
    "answer_cases_markdown",
    "group_rows",
    "is_answers",
    "shortfall",
]

CASE_LIMIT = 50  # cases with problems listed in report.md; report.html lists every case
_COLUMNS = (
    "hit_type_accuracy",
    "answer_keyword_recall",
    "source_first",
    "right_place",
    "citation_recall",
    "faithfulness",
)
GROUP_COLUMNS = (
    "source_first",
    "right_place",
    "keywords_present",
    "near_miss_refused",
    "answerable_refused",
)
"""The metrics shown per group: where trust in an answer is won or lost."""


def group_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """One row per group: its name, cases, answerable cases and each of GROUP_COLUMNS
    (``–``: not measured in that group)."""
    rows = []
    for group, found in report.get("groups", {}).items():
        metrics = found["metrics"]
        cells = [f"{metrics[name]:.3f}" if name in metrics else "–" for name in GROUP_COLUMNS]
        rows.append([group, str(found["cases"]), str(found["answerable"]), *cells])
    return rows


def _group_markdown(report: Mapping[str, Any]) -> list[str]:
    rows = group_rows(report)
    if not rows:
        return []
    heads = ["group", "cases", "answerable", *GROUP_COLUMNS]
    return [
        "",
        "## Groups",
        "",
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _group_html(report: Mapping[str, Any]) -> str:
    rows = group_rows(report)
    if not rows:
        return ""
    heads = "".join(f"<th>{escape(h)}</th>" for h in ("group", "cases", "answerable"))
    heads += "".join(f"<th>{escape(h)}</th>" for h in GROUP_COLUMNS)
    body = "".join(
        f"<tr><td>{escape(row[0])}</td>"
        + "".join(f'<td class="num">{escape(cell)}</td>' for cell in row[1:])
        + "</tr>"
        for row in rows
    )
    return f"<h2>Groups</h2><table><tr>{heads}</tr>{body}</table>"


def is_answers(report: Mapping[str, Any]) -> bool:
    return report.get("kind") == "answers"


def shortfall(case: Mapping[str, Any]) -> bool:
    """Whether a case (or a retrieval query) missed: problems, or nothing relevant found."""
    if "problems" in case:
        return bool(case["problems"])
    return bool(case["metrics"]["ndcg@10"] == 0)


def answer_cases_markdown(report: Mapping[str, Any]) -> list[str]:
    """The violations count and each case with problems, in the order of the golden file."""
    lines = _group_markdown(report)
    lines += ["", f"must_not_say violations: {report.get('must_not_say_violations', 0)}."]
    short = [case for case in report.get("per_query", []) if case["problems"]]
    if not short:
        return lines
    lines += ["", f"## Cases that fell short: {len(short)}", ""]
    for case in short[:CASE_LIMIT]:
        lines.append(f"- `{case['qid']}` {case['query']!r}: {'; '.join(case['problems'])}")
    if len(short) > CASE_LIMIT:
        lines.append(f"- … and {len(short) - CASE_LIMIT} more (see report.html)")
    return lines


def answer_cases_html(report: Mapping[str, Any]) -> str:
    """Every case, those with problems first (highlighted), with its answer and scores."""
    cases = sorted(report.get("per_query", []), key=lambda c: (not c["problems"], c["qid"]))
    if not cases:
        return _group_html(report)
    short = sum(1 for c in cases if c["problems"])
    heads = "".join(f"<th>{escape(name)}</th>" for name in _COLUMNS)
    head = (
        f"<h2>Cases, those that fell short first ({short} highlighted)</h2>"
        f"<p>must_not_say violations: {report.get('must_not_say_violations', 0)}</p>"
        "<table><tr><th>id</th><th>question</th><th>hit type (expected)</th>"
        f"{heads}<th>answer</th><th>problems</th></tr>"
    )
    rows = "".join(_row(case) for case in cases)
    return _group_html(report) + head + rows + "</table>"


def _row(case: Mapping[str, Any]) -> str:
    miss = ' class="miss"' if case["problems"] else ""
    cells = "".join(
        f'<td class="num">{case["metrics"][name]:.3f}</td>'
        if name in case["metrics"]
        else '<td class="num">–</td>'
        for name in _COLUMNS
    )
    expected = case["expected_hit_type"] or "–"
    refused = " refused" if case.get("refused") else ""
    return (
        f"<tr{miss}><td>{escape(case['qid'])}</td><td>{escape(case['query'])}</td>"
        f"<td>{escape(case['hit_type'])}{refused} ({escape(expected)})</td>{cells}"
        f"<td>{escape(case['answer'][:400])}</td>"
        f"<td>{escape('; '.join(case['problems']))}</td></tr>"
    )
