"""The gate of a version build: the collection's golden questions on the new version, and
on the active one for comparison, against the minimums of ``eval.gates``: searched when the
gate sets retrieval minimums, asked and their answers scored when it sets answer ones."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowhub.answer.events import AnswerEvent
from knowhub.errors import ConfigError, KnowhubError
from knowhub.eval.answers import (
    ANSWER_METRICS,
    JUDGED_METRICS,
    AnswerRun,
    Scoring,
    check_sources,
    run_answers,
)
from knowhub.eval.gate import GateResult, check_gate, find_gate
from knowhub.eval.golden import AnswerCase, golden_set, load_answer_cases
from knowhub.eval.judge import RagasJudge
from knowhub.eval.runner import METRICS, IngestOutcome, check_judgments, run_queries
from knowhub.eval.sets import EvalSet
from knowhub.ingest.progress import Progress
from knowhub.models import DocumentRecord, Hit
from knowhub.query.pipeline import SearchResult
from knowhub.versions.record import FAILED, Target, set_version

if TYPE_CHECKING:  # annotations only: the CLI's other commands never load the App
    from knowhub.app import App
    from knowhub.collection import Collection

__all__ = ["GateCheck", "GateRun", "compare_versions", "gate_check", "run_gate"]

# Hits per golden query, as `knowhub eval` takes them (recall@100 needs 100).
_GATE_TOP_K = 100


@dataclass(frozen=True)
class GateCheck:
    """What a gate runs: the golden questions and the minimums they must reach — the
    retrieval judgments (None: the gate sets no retrieval minimum) and the answer cases
    (empty: no answer minimum)."""

    evalset: EvalSet | None
    key: str
    thresholds: dict[str, float]
    golden: Path
    cases: tuple[AnswerCase, ...] = ()

    @property
    def queries(self) -> int:
        return max(len(self.evalset.queries) if self.evalset else 0, len(self.cases))


@dataclass(frozen=True)
class GateRun:
    """A gate's outcome: the new version's metrics next to the active version's (empty,
    with ``compared_error``, when the active one could not be searched)."""

    result: GateResult
    golden: str
    queries: int
    metrics: dict[str, float]
    compared_with: int
    compared_metrics: dict[str, float]
    compared_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "golden": self.golden,
            "queries": self.queries,
            "metrics": self.metrics,
            "compared_with": self.compared_with,
            "compared_metrics": self.compared_metrics,
            "compared_error": self.compared_error,
        }


def gate_check(app: App, collection: str | None, golden: Path) -> GateCheck:
    """The gate a build of ``collection`` must pass; a clear error when there is none."""
    name = app.resolve(collection).collection
    found = find_gate(app.settings.eval.gates, [name, golden.stem])
    if found is None:
        raise ConfigError(
            f"no gate for collection {name!r} in eval.gates (configured: "
            f"{', '.join(app.settings.eval.gates) or 'none'}): add its minimums to knowhub.yaml, "
            f"e.g. `eval: {{gates: {{{name}: {{ndcg@10: 0.8, hit_rate@10: 0.9}}}}}}`"
        )
    key, thresholds = found
    evalset = golden_set(golden, name) if set(thresholds) & set(METRICS) else None
    answers = set(thresholds) & set(ANSWER_METRICS)
    cases = tuple(load_answer_cases(golden, name)) if answers else ()
    return GateCheck(evalset, key, dict(thresholds), golden, cases)


@dataclass(frozen=True)
class _Pinned:
    """The runner's view of one version of a collection (``knowhub.eval.runner.Searcher``):
    its handle, searching untraced (a gate's questions are a measurement, not traffic to
    look at in traces)."""

    handle: Collection

    def ingest(
        self, paths: Sequence[Path], *, prune: bool = False, progress: Progress | None = None
    ) -> IngestOutcome:
        return self.handle.ingest(paths, prune=prune, progress=progress)

    def search(self, query: str, top_k: int | None = None) -> SearchResult:
        return self.handle.retrieve(query, top_k)

    def documents(self) -> Sequence[DocumentRecord]:
        return self.handle.documents()

    def chunk(self, chunk_id: str) -> Sequence[Hit]:
        return self.handle.chunk(chunk_id)

    def ask(self, question: str) -> Iterator[AnswerEvent]:
        return self.handle.ask(question)


def run_gate(app: App, gate: GateCheck, base: Target, target: Target) -> GateRun:
    """The gate of a build: a version it could not even measure is marked failed."""
    try:
        new = _measure(app, gate, target, judged=True)
    except BaseException:
        set_version(app.store, target, state=FAILED)  # not measured: not proven
        raise
    return _verdict(app, gate, base, new)


def compare_versions(app: App, gate: GateCheck, base: Target, target: Target) -> GateRun:
    """``target`` judged by the gate, next to ``base``'s numbers; records nothing (what the
    console shows before a switch)."""
    return _verdict(app, gate, base, _measure(app, gate, target, judged=True))


def _verdict(app: App, gate: GateCheck, base: Target, new: dict[str, float]) -> GateRun:
    compared: dict[str, float] = {}
    error = None
    try:  # only for comparison: the gate judges the new version alone
        compared = _measure(app, gate, base, judged=False)
    except KnowhubError as exc:  # e.g. built with an embedder the configuration has left
        error = str(exc)
    return GateRun(
        check_gate(gate.key, gate.thresholds, new, (*METRICS, *ANSWER_METRICS)),
        str(gate.golden),
        gate.queries,
        _rounded(new),
        base.number,
        _rounded(compared),
        error,
    )


def _rounded(metrics: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 6) for name, value in metrics.items()}


def _measure(app: App, gate: GateCheck, target: Target, judged: bool) -> dict[str, float]:
    """The version's metrics: retrieval (searching the judged queries) and answers (asking
    the cases), as far as the gate sets minimums for them."""
    handle = app.collection(target.collection, target.number)
    pinned, metrics = _Pinned(handle), dict[str, float]()
    if gate.evalset is not None:
        if judged:  # every expected source must be in the version, else it could only score 0
            check_judgments(pinned, gate.evalset, target.collection)
        metrics |= run_queries(pinned, gate.evalset, target.collection, _GATE_TOP_K).metrics
    if gate.cases:
        if judged:
            sources = {record.source for record in pinned.documents()}
            check_sources(gate.cases, sources, gate.golden, target.collection)
        judge = None
        if app.llm is not None and set(gate.thresholds) & set(JUDGED_METRICS):
            cache = app.settings.data_dir / "eval" / "judge-cache"
            judge = RagasJudge(app.llm, handle.embedder, cache)
        scoring = Scoring(app.settings.answer.verification, handle.embedder, judge)
        results = run_answers(pinned, gate.cases, scoring)
        metrics |= AnswerRun(gate.golden.stem, gate.golden, target.collection, results).metrics
    return metrics
