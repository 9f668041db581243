"""``knowhub eval --answers``: ask a golden file's cases of a collection and score the answers.

The report is built here; :mod:`knowhub.interfaces.cli.eval` writes it, compares it with a
baseline and checks its gate, as for a retrieval run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowhub.checks import check_collection_name
from knowhub.eval.answers import ANSWER_METRICS, AnswerRun, Scoring, check_sources, run_answers
from knowhub.eval.gate import check_gate, find_gate
from knowhub.eval.golden import load_answer_cases
from knowhub.interfaces.cli.context import progress_bar

if TYPE_CHECKING:  # annotations only: `--help`, `--version` and the other commands skip it
    from knowhub.app import App

__all__ = ["answer_report"]


def answer_report(app: App, golden: Path, collection: str | None) -> tuple[dict[str, Any], str]:
    """The report of answering ``golden``'s cases from ``collection``, gate checked when
    ``eval.gates`` has one for the golden file's stem or the collection; and its slug."""
    name = check_collection_name(collection or app.settings.collection)
    cases = load_answer_cases(golden, name)
    check_sources(cases, {record.source for record in app.documents(name)}, golden, name)
    scoring = Scoring(app.settings.answer.verification, app.collection(name).embedder)
    with progress_bar("answering") as progress:
        results = run_answers(app, cases, name, scoring, progress)
    run = AnswerRun(golden.stem, golden, name, results, _context(app))
    report = run.to_dict()
    found = find_gate(app.settings.eval.gates, [golden.stem, name])
    if found is not None:
        report["gate"] = check_gate(found[0], found[1], run.metrics, ANSWER_METRICS).to_dict()
    return report, f"{golden.stem}-answers"


def _context(app: App) -> dict[str, Any]:
    settings, llm = app.settings, app.llm
    return {
        "embedder": settings.embedder.provider,
        "llm": llm.model_id if llm is not None else "none (extractive)",
        "min_evidence": settings.answer.min_evidence,
        "reranker": settings.reranker.provider,
    }
