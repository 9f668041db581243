"""Quality gates: per data set (or collection) minimums for the metrics of a run.

Configured as ``eval.gates`` (``{key: {metric: minimum}}``); the key is the evaluation's
name (``scifact``, ``xquad-ru@subset``, a golden file's stem) or its collection. A gate may
hold retrieval and answer metrics: each run checks those it measures (``knowhub eval`` the
retrieval ones, ``knowhub eval --answers`` the answer ones, a version build both). For a
metric where lower is better (``answerable_refused``) the number is a maximum. An answer
run also checks each group of its cases against the gate keyed ``KEY/GROUP``
(``realdocs/zh``), KEY being the run's name or its collection.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.errors import ConfigError
from knowhub.eval.answers import ANSWER_METRICS, CEILINGS, JUDGED_METRICS
from knowhub.eval.runner import METRICS

__all__ = [
    "AnswerGate",
    "GateResult",
    "Shortfall",
    "answer_gate",
    "bound",
    "check_gate",
    "find_gate",
    "meets",
]


def meets(metric: str, value: float, limit: float) -> bool:
    """Whether ``value`` meets the gate's ``limit`` (a maximum for a metric in CEILINGS)."""
    return value <= limit if metric in CEILINGS else value >= limit


def bound(metric: str) -> str:
    """How the gate bounds ``metric``: ``≥`` a minimum, or ``≤`` a maximum."""
    return "≤" if metric in CEILINGS else "≥"


@dataclass(frozen=True)
class Shortfall:
    metric: str
    value: float
    minimum: float  # the gate's limit: a maximum for a metric in CEILINGS

    def __str__(self) -> str:
        digits = 3  # more only when 3 would print two equal numbers
        while digits < 6 and round(self.value, digits) == round(self.minimum, digits):
            digits += 1
        sign = ">" if self.metric in CEILINGS else "<"
        return (
            f"{self.metric} {self.value:.{digits}f} {sign} {self.minimum:.{digits}f} "
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
        if not meets(metric, metrics[metric], minimum):
            failures.append(Shortfall(metric, metrics[metric], minimum))
    return GateResult(key, judged, tuple(failures))


@dataclass(frozen=True)
class AnswerGate:
    """An answer run's gate: the whole run's (None: no gate for it) and each group's."""

    overall: GateResult | None
    groups: Mapping[str, GateResult]

    @property
    def passed(self) -> bool:
        results = [self.overall, *self.groups.values()]
        return all(result.passed for result in results if result is not None)

    def to_dict(self) -> dict[str, Any]:
        """As :meth:`GateResult.to_dict` (thresholds: the whole run's), each group's
        shortfalls among the failures after its name, and ``groups``: each one's result."""
        keys = [self.overall.key] if self.overall else []
        failures = [str(f) for f in self.overall.failures] if self.overall else []
        for group, result in self.groups.items():
            keys.append(result.key)
            failures += [f"{group}: {failure}" for failure in result.failures]
        return {
            "key": ", ".join(keys),
            "passed": self.passed,
            "thresholds": dict(self.overall.thresholds) if self.overall else {},
            "failures": failures,
            "groups": {group: result.to_dict() for group, result in self.groups.items()},
        }


def answer_gate(
    gates: Mapping[str, Mapping[str, float]],
    keys: Sequence[str],
    metrics: Mapping[str, float],
    groups: Mapping[str, Mapping[str, float]],
) -> AnswerGate | None:
    """Check an answer run's ``metrics`` against the gate of the first of ``keys`` that has
    one, and each group's against the first ``KEY/GROUP`` gate; None when none has."""
    found = find_gate(gates, keys)
    overall = None if found is None else check_gate(*found, metrics, ANSWER_METRICS)
    checked = {}
    for group, measured in groups.items():
        own = find_gate(gates, [f"{key}/{group}" for key in keys])
        if own is not None:
            checked[group] = check_gate(*own, measured, ANSWER_METRICS)
    if overall is None and not checked:
        return None
    return AnswerGate(overall, checked)


_NEEDS = {
    "keyword_recall": "keyword_recall needs expected_keywords in a golden file",
    "hit_type_accuracy": "it needs cases with expected_hit_type",
    "answer_keyword_recall": "it needs cases with expected_keywords",
    "must_not_say_compliance": "it needs cases with must_not_say",
    "citation_precision": "it needs cases with expected_sources",
    "citation_recall": "it needs cases with expected_sources",
    "keywords_present": "it needs cases with expected_keywords",
    "source_first": "it needs cases with expected_sources",
    "right_place": "it needs cases with expected_section or expected_page",
    "near_miss_refused": "it needs cases expecting insufficient_context",
    "answerable_refused": "it needs cases not expecting insufficient_context",
    "faithfulness": "it needs cases answered from sources (hit_type rag)",
}


def _hint(metric: str) -> str:
    """What measures ``metric``, for an error about a gate that could not check it."""
    if metric in JUDGED_METRICS:
        return "an LLM-judged metric: it needs llm.provider set and `knowhub eval --answers`"
    if metric in ANSWER_METRICS:
        return f"an answer metric, of `knowhub eval --answers`; {_NEEDS[metric]}"
    return _NEEDS.get(metric, "a retrieval metric, of `knowhub eval GOLDEN`")
