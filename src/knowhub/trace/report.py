"""Reading traces as a person does: filter, summarise, draw one as a waterfall."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from knowhub.errors import QueryError
from knowhub.trace.record import Trace

__all__ = ["parse_since", "select", "summarize", "waterfall"]


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``"2h"``/``"30m"``/``"7d"`` ago, or an ISO date/time (UTC if no zone is given)."""
    now = now or datetime.now(UTC)
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if text[:-1].isdigit() and text[-1:] in units:
        return now - timedelta(seconds=int(text[:-1]) * units[text[-1]])
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise QueryError(
            f"--since {text!r} is neither a duration (30m, 2h, 7d) nor an ISO date"
        ) from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def select(
    traces: Iterable[Trace],
    kind: str | None = None,
    slow_ms: float | None = None,
    errors: bool = False,
    since: datetime | None = None,
) -> list[Trace]:
    out = []
    for trace in traces:
        if kind and trace.kind != kind:
            continue
        if slow_ms is not None and trace.duration_ms < slow_ms:
            continue
        if errors and not trace.error:
            continue
        if since and datetime.fromisoformat(trace.started_at.replace("Z", "+00:00")) < since:
            continue
        out.append(trace)
    return out


def summarize(traces: list[Trace]) -> dict[str, Any]:
    """Count, errors, total and per-stage p50/p95 (ms), and the stage slowest at p95."""
    stages: dict[str, list[float]] = {}
    for trace in traces:
        for stage, ms in trace.stages_ms.items():
            stages.setdefault(stage, []).append(ms)
    per_stage = {
        s: {"count": len(v), "p50": _pct(v, 50), "p95": _pct(v, 95)}
        for s, v in sorted(stages.items())
    }
    slowest = max(stages, key=lambda s: _pct(stages[s], 95) or 0.0) if stages else None
    totals = [t.duration_ms for t in traces]
    return {
        "count": len(traces),
        "errors": sum(1 for t in traces if t.error),
        "by_kind": {
            k: sum(1 for t in traces if t.kind == k) for k in sorted({t.kind for t in traces})
        },
        "total_ms": {"p50": _pct(totals, 50), "p95": _pct(totals, 95)},
        "stages_ms": per_stage,
        "slowest_stage": slowest,
    }


def waterfall(trace: Trace, width: int = 40) -> str:
    """The stages laid end to end, each a bar scaled to the run's duration."""
    spans = [ms for s, ms in trace.stages_ms.items() if not s.endswith("first_token")]
    total = max(trace.duration_ms, sum(spans), 1e-9)
    head = [
        f"trace {trace.trace_id}  {trace.kind} via {trace.interface}  {trace.started_at}",
        f"collection {trace.collection} ({trace.kb_version_label})  total "
        f"{trace.duration_ms:.1f} ms" + (f"  query {trace.query!r}" if trace.query else ""),
    ]
    if trace.hit_type:
        head.append(
            f"hit_type {trace.hit_type}  confidence {trace.confidence}  sources "
            f"{trace.sources_count}  top score {trace.top_source_score}"
        )
    if trace.error:
        head.append(f"ERROR {trace.error}")
    name_width = max((len(s) for s in trace.stages_ms), default=5)
    rows, at = [], 0.0
    for stage, ms in trace.stages_ms.items():
        start = int(at / total * width)
        length = max(1, round(ms / total * width))
        hits = trace.stage_hits.get(stage)
        bar = " " * start + "█" * length
        rows.append(
            f"  {stage:<{name_width}} {bar:<{width + 1}} {ms:8.1f} ms"
            + (f"  {hits} hits" if hits is not None else "")
        )
        if not stage.endswith("first_token"):  # a moment inside the next stage, not a span
            at += ms
    notes = [f"  note: {n}" for n in trace.notes]
    return "\n".join([*head, *rows, *_step_lines(trace), *notes])


def _step_lines(trace: Trace) -> list[str]:
    """A chat's tool calls: what each was asked, what it gave."""
    lines = []
    for step in trace.steps:
        if step.get("kind") != "tool":
            continue
        outcome = f"ERROR {step['error']}" if step.get("error") else f"{step['result_chars']} chars"
        cut = " (truncated)" if step.get("truncated") else ""
        lines.append(
            f"  step {step['step']} {step['server']}/{step['tool']} {step['arguments']} → "
            f"{outcome}{cut}"
        )
    return lines


def _pct(values: list[float], pct: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[index], 2)
