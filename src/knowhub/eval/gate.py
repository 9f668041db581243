"""Quality gates: per data set (or collection) minimums for the metrics of a run.

Configured as ``eval.gates`` (``{key: {metric: minimum}}``); the key is the evaluation's
name (``scifact``, ``xquad-ru@subset``, a golden file's stem) or its collection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.errors import ConfigError
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
    key: str, thresholds: Mapping[str, float], metrics: Mapping[str, float]
) -> GateResult:
    """Compare ``metrics`` with each minimum; a metric not measured is an error, not a pass."""
    failures = []
    for metric, minimum in thresholds.items():
        if metric not in METRICS:
            raise ConfigError(
                f"eval.gates.{key}: unknown metric {metric!r}; known: {', '.join(METRICS)}"
            )
        if metric not in metrics:
            raise ConfigError(
                f"eval.gates.{key}: {metric} was not measured in this run (keyword_recall needs "
                "expected_keywords in a golden file); remove it from the gate"
            )
        if metrics[metric] < minimum:
            failures.append(Shortfall(metric, metrics[metric], minimum))
    return GateResult(key, thresholds, tuple(failures))
