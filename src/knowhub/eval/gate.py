"""Quality gates: per data set (or collection) minimums for the metrics of a run.

Configured as ``eval.gates`` (``{key: {metric: minimum}}``); the key is the evaluation's
name (``scifact``, ``xquad-ru@subset``, a golden file's stem) or its collection. A gate may
hold retrieval and answer metrics: each run checks those it measures (``knowhub eval`` the
retrieval ones, ``knowhub eval --answers`` the answer ones, a version build both).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.errors import ConfigError
from knowhub.eval.answers import ANSWER_METRICS, JUDGED_METRICS
from knowhub.eval.runner import METRICS

__all__ = ["GateResult", "Shortfall", "check_gate", "find_gate"]


@dataclass(frozen=True)
class Shortfall:
    metric: str
    value: float
    minimum: float

    def __str__(self) -> str:
        digits = 3  # more only when 3 would print two equal numbers
        while digits < 6 and round(self.value, digits) == round(self.minimum, digits):
            digits += 1
        return (
            f"{self.metric} {self.value:.{digits}f} < {self.minimum:.{digits}f} "
            f"({self.value - self.minimum:+.{digits}f})"
        )


@dataclass(frozen=True)
class GateResult:
    key: str
    thresholds: Mapping[str, float]
    failures: tuple[Shortfall, ...]

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "passed": self.passed,
            "thresholds": dict(self.thresholds),
            "failures": [str(f) for f in self.failures],
        }


def find_gate(
    gates: Mapping[str, Mapping[str, float]], keys: Sequence[str]
) -> tuple[str, Mapping[str, float]] | None:
    """The first of ``keys`` that has a gate, with its thresholds; None if none has."""
    return next(((key, gates[key]) for key in keys if key in gates), None)


def check_gate(
    key: str,
    thresholds: Mapping[str, float],
    metrics: Mapping[str, float],
    checks: Collection[str] = METRICS,
) -> GateResult:
    """Compare ``metrics`` with each minimum of the gate among ``checks`` (the metrics this
    kind of run measures); a metric not measured is an error, not a pass."""
    known = (*METRICS, *ANSWER_METRICS)
    for metric in thresholds:
        if metric not in known:
            raise ConfigError(
                f"eval.gates.{key}: unknown metric {metric!r}; known: {', '.join(known)}"
            )
    judged = {metric: minimum for metric, minimum in thresholds.items() if metric in checks}
    if not judged:
        raise ConfigError(
            f"eval.gates.{key} sets no minimum this run measures ({', '.join(checks)}); add "
            f"one, or run the evaluation its metrics need: {_hint(next(iter(thresholds), ''))}"
        )
    failures = []
    for metric, minimum in judged.items():
        if metric not in metrics:
            raise ConfigError(
                f"eval.gates.{key}: {metric} was not measured in this run ({_hint(metric)}); "
                "remove it from the gate"
            )
        if metrics[metric] < minimum:
            failures.append(Shortfall(metric, metrics[metric], minimum))
    return GateResult(key, judged, tuple(failures))


_NEEDS = {
    "keyword_recall": "keyword_recall needs expected_keywords in a golden file",
    "hit_type_accuracy": "it needs cases with expected_hit_type",
    "answer_keyword_recall": "it needs cases with expected_keywords",
    "must_not_say_compliance": "it needs cases with must_not_say",
    "citation_precision": "it needs cases with expected_sources",
    "citation_recall": "it needs cases with expected_sources",
    "faithfulness": "it needs cases answered from sources (hit_type rag)",
}


def _hint(metric: str) -> str:
    """What measures ``metric``, for an error about a gate that could not check it."""
    if metric in JUDGED_METRICS:
        return "an LLM-judged metric: it needs llm.provider set and `knowhub eval --answers`"
    if metric in ANSWER_METRICS:
        return f"an answer metric, of `knowhub eval --answers`; {_NEEDS[metric]}"
    return _NEEDS.get(metric, "a retrieval metric, of `knowhub eval GOLDEN`")
