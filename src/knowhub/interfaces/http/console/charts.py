"""The console's charts as numbers the templates draw: bar widths and offsets in percent.

Geometry is computed here, not in the templates, so it is tested without a browser and a
template only places rectangles (inline SVG or CSS widths: no script, no chart library).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.trace.record import Trace

__all__ = [
    "Bar",
    "MetricGroup",
    "Span",
    "metric_groups",
    "run_label",
    "stage_bars",
    "waterfall_spans",
]

# Run colours for the evaluation chart (distinct, readable on white), reused in turn.
PALETTE = ("#4a7bd0", "#e8710a", "#1e8e3e", "#a142f4", "#d93025", "#12b5cb", "#f9ab00")


@dataclass(frozen=True)
class Bar:
    """One stage's time: ``width`` is its share of the longest stage, in percent."""

    stage: str
    ms: float
    width: float


@dataclass(frozen=True)
class Span:
    """One stage on the waterfall: where it starts and how long it is, in percent of the run.

    A ``moment`` (``llm_first_token``) happens inside the next stage rather than taking time
    of its own, so it is drawn as a tick and does not push the later stages right.
    """

    stage: str
    ms: float
    start: float
    width: float
    hits: int | None
    moment: bool


@dataclass(frozen=True)
class MetricGroup:
    """One metric across runs: ``(run label, value, colour)`` per run, oldest first."""

    metric: str
    values: list[tuple[str, float, str]]


def stage_bars(timings_ms: Mapping[str, float]) -> list[Bar]:
    longest = max(timings_ms.values(), default=0.0) or 1.0
    return [
        Bar(stage, round(ms, 3), round(max(0.5, 100.0 * ms / longest), 2))
        for stage, ms in timings_ms.items()
    ]


def waterfall_spans(trace: Trace) -> list[Span]:
    """The stages end to end, scaled to the run's duration (as ``knowhub traces show``)."""
    spans = [ms for s, ms in trace.stages_ms.items() if not s.endswith("first_token")]
    total = max(trace.duration_ms, sum(spans), 1e-9)
    out, at = [], 0.0
    for stage, ms in trace.stages_ms.items():
        moment = stage.endswith("first_token")
        start = min(100.0, 100.0 * (at + (ms if moment else 0.0)) / total)
        width = 0.0 if moment else max(0.4, 100.0 * ms / total)
        out.append(
            Span(
                stage,
                round(ms, 3),
                round(start, 2),
                round(min(width, 100.0 - start), 2),
                trace.stage_hits.get(stage),
                moment,
            )
        )
        if not moment:
            at += ms
    return out


def metric_groups(runs: Sequence[Mapping[str, Any]], limit: int = 8) -> list[MetricGroup]:
    """Each metric of the latest ``limit`` runs (reports, oldest first), a bar per run.

    A run that lacks a metric has no bar in that group; values are clamped to 0–1.
    """
    shown = list(runs)[-limit:]
    names: dict[str, None] = {}
    for run in shown:
        names.update(dict.fromkeys(k for k, v in run["metrics"].items() if _number(v)))
    groups = []
    for name in names:
        values = [
            (
                run_label(run),
                max(0.0, min(1.0, float(run["metrics"][name]))),
                PALETTE[i % len(PALETTE)],
            )
            for i, run in enumerate(shown)
            if _number(run["metrics"].get(name))
        ]
        groups.append(MetricGroup(name, values))
    return groups


def run_label(run: Mapping[str, Any]) -> str:
    split = f" ({run['split']})" if run.get("split") else ""
    created = str(run.get("created", ""))[:16].replace("T", " ")
    return f"{run.get('name', '?')}{split} {created}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
