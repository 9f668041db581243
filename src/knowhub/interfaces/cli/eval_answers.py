"""``knowhub eval --answers``: ask a golden file's cases (or those of a folder of golden
files) of a collection and score the answers.

The report is built here; :mod:`knowhub.interfaces.cli.eval` writes it, compares it with a
baseline and checks its gate, as for a retrieval run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowhub.errors import ConfigError
from knowhub.eval.answers import AnswerRun, Scoring, check_sources, run_answers
from knowhub.eval.gate import answer_gate
from knowhub.eval.golden import AnswerCase, load_answer_cases
from knowhub.eval.judge import RagasJudge
from knowhub.interfaces.cli.context import progress_bar

if TYPE_CHECKING:  # annotations only: `--help`, `--version` and the other commands skip it
    from knowhub.app import App

__all__ = ["answer_report", "judge_cache"]


def answer_report(app: App, golden: Path, collection: str | None) -> tuple[dict[str, Any], str]:
    """The report of answering ``golden``'s cases from ``collection`` (LLM-judged too when an
    LLM is configured), gate checked when ``eval.gates`` has one for the golden file's stem
    (a folder's name) or the collection, or for one of its groups; and its slug."""
    name = app.named(collection)
    handle = app.collection(name)
    cases = _cases(app, golden, name)
    embedder = handle.embedder
    judge = None if app.llm is None else RagasJudge(app.llm, embedder, judge_cache(app))
    scoring = Scoring(app.settings.answer.verification, embedder, judge)
    with progress_bar("answering") as progress:
        results = run_answers(handle, cases, scoring, progress)
    run = AnswerRun(golden.stem, golden, name, results, _context(app))
    report = run.to_dict()
    if judge is not None:
        report["judge"] = {
            "model": judge.llm.model_id,
            "calls": judge.calls,
            "cached": judge.cached,
        }
    gate = answer_gate(app.settings.eval.gates, [golden.stem, name], run.metrics, run.groups)
    if gate is not None:
        report["gate"] = gate.to_dict()
    return report, f"{golden.stem}-answers"


def _cases(app: App, golden: Path, collection: str) -> list[AnswerCase]:
    """The cases of the golden file, or of every ``*.json`` file of the folder (ids unique
    across them), their expected sources checked against the collection."""
    files = sorted(golden.glob("*.json")) if golden.is_dir() else [golden]
    if not files:
        raise ConfigError(
            f"{golden}: no golden *.json file in this folder; --answers needs a golden JSON "
            "file or a folder of them"
        )
    sources = {record.source for record in app.collection(collection).documents()}
    cases: list[AnswerCase] = []
    first: dict[str, Path] = {}
    for path in files:
        found = load_answer_cases(path, collection)
        check_sources(found, sources, path, collection)
        for case in found:
            if first.setdefault(case.qid, path) != path:
                raise ConfigError(
                    f"{path}:{case.line}: id {case.qid!r} is also in {first[case.qid]}; ids "
                    "must be unique across the folder's files"
                )
        cases += found
    return cases


def judge_cache(app: App) -> Path:
    """Where the LLM judge's replies are kept, by the hash of what it was asked."""
    return app.settings.data_dir / "eval" / "judge-cache"


def _context(app: App) -> dict[str, Any]:
    settings, llm = app.settings, app.llm
    return {
        "embedder": settings.embedder.provider,
        "llm": llm.model_id if llm is not None else "none (extractive)",
        "min_evidence": settings.answer.min_evidence,
        "reranker": settings.reranker.provider,
    }
