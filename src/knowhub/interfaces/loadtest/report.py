"""The load report: figures per endpoint, the servers' memory and CPU, and whether the run
met its goal; as a dict (report.json), Markdown (report.md) and a terminal table."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from knowhub.interfaces.loadtest import ENDPOINTS
from knowhub.interfaces.loadtest.probes import Outcome
from knowhub.interfaces.loadtest.procstat import Sample

__all__ = [
    "endpoint_stats",
    "markdown",
    "percentile",
    "server_stats",
    "spread",
    "summary",
    "table",
    "timeline",
]

MB = 1024 * 1024
PERCENTILES = (50, 95, 99)
LAG_WARNING_MS = 50.0


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank percentile (the smallest value with p % of values at or below it)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(math.ceil(p / 100.0 * len(ordered)), 1)
    return ordered[rank - 1]


def spread(values: Sequence[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {f"p{p}": percentile(values, p) for p in PERCENTILES}
    out["max"] = max(values) if values else None
    out["mean"] = round(sum(values) / len(values), 2) if values else None
    return out


def endpoint_stats(outcomes: Sequence[Outcome], wall_s: float) -> dict[str, Any]:
    """Counts, rate and latencies of one endpoint's requests (successful ones for latency)."""
    kinds = Counter(o.kind for o in outcomes)
    good = [o for o in outcomes if o.kind == "ok"]
    stages: dict[str, list[float]] = {}
    for o in good:
        for stage, ms in o.stages_ms.items():
            stages.setdefault(stage, []).append(ms)
    firsts = [o.first_token_ms for o in good if o.first_token_ms is not None]
    errors = Counter(o.error or "" for o in outcomes if o.kind != "ok")
    return {
        "requests": len(outcomes),
        "ok": kinds["ok"],
        "errors": kinds["error"],
        "timeouts": kinds["timeout"],
        "torn": kinds["torn"],
        "success_rate": round(kinds["ok"] / len(outcomes), 5) if outcomes else None,
        "rate_rps": round(len(good) / wall_s, 2) if wall_s > 0 else None,
        "latency_ms": spread([o.latency_ms for o in good]),
        "first_token_ms": spread(firsts) if firsts else None,
        "stages_ms": {
            k: {"p50": percentile(v, 50), "p95": percentile(v, 95)}
            for k, v in sorted(stages.items())
        },
        "error_kinds": dict(errors.most_common(10)),
    }


def server_stats(
    samples: Sequence[Sample], idle: Sequence[Sample], after: Sample | None
) -> dict[str, Any]:
    """Idle RSS (before the load), peak and mean RSS and CPU during it, RSS after it."""
    rss = [s.rss_bytes for s in samples]
    cpu = [s.cpu_pct for s in samples[1:]]  # the first sample has no interval
    idle_rss = max((s.rss_bytes for s in idle), default=None)
    idle_cpu = [s.cpu_pct for s in idle[1:]]
    peak = max(rss, default=None)
    return {
        "idle_rss_mb": _mb(idle_rss),
        "idle_cpu_pct": round(sum(idle_cpu) / len(idle_cpu), 1) if idle_cpu else None,
        "peak_rss_mb": _mb(peak),
        "mean_rss_mb": _mb(int(sum(rss) / len(rss))) if rss else None,
        "after_rss_mb": _mb(after.rss_bytes) if after else None,
        "cpu_mean_pct": round(sum(cpu) / len(cpu), 1) if cpu else None,
        "cpu_peak_pct": max(cpu, default=None),
        # The goal of issue 12: sustained RSS within 1.5 x idle + 100 MB.
        "rss_bound_mb": _mb(int(1.5 * idle_rss + 100 * MB)) if idle_rss else None,
        "memory_bounded": (peak <= 1.5 * idle_rss + 100 * MB) if idle_rss and peak else None,
        "samples": [[s.at_s, _mb(s.rss_bytes), s.cpu_pct] for s in samples],
    }


def summary(by_endpoint: dict[str, list[Outcome]], wall_s: float) -> dict[str, Any]:
    everything = [o for group in by_endpoint.values() for o in group]
    ok = sum(o.kind == "ok" for o in everything)
    ends = sorted(o.started_s + o.latency_ms / 1000.0 for o in everything)
    return {
        "requests": len(everything),
        "ok": ok,
        "success_rate": round(ok / len(everything), 5) if everything else None,
        "throughput_rps": round(ok / wall_s, 2) if wall_s > 0 else None,
        "timeouts": sum(o.kind == "timeout" for o in everything),
        "torn": sum(o.kind == "torn" for o in everything),
        # The longest time in which no request finished: a stall, or a deadlock that cleared.
        "longest_stall_s": _longest_gap(ends) if ends else wall_s,
        "timeline": timeline(everything),
    }


def _longest_gap(ends: Sequence[float]) -> float:
    return round(max(b - a for a, b in itertools.pairwise([0.0, *ends])), 2)


def timeline(outcomes: Sequence[Outcome]) -> list[dict[str, int]]:
    """Requests finished per second of the run, ok and not."""
    seconds: dict[int, Counter[str]] = {}
    for o in outcomes:
        second = int(o.started_s + o.latency_ms / 1000.0)
        seconds.setdefault(second, Counter())["ok" if o.kind == "ok" else "failed"] += 1
    return [{"s": s, "ok": c["ok"], "failed": c["failed"]} for s, c in sorted(seconds.items())]


# -- rendering -------------------------------------------------------------------------

_COLUMNS = (
    "endpoint",
    "requests",
    "ok",
    "errors",
    "timeouts",
    "torn",
    "ok/s",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "1st token p50",
    "p95",
    "p99",
)


def _rows(report: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, stats in report["endpoints"].items():
        lat, first = stats["latency_ms"], stats["first_token_ms"] or {}
        rows.append(
            [
                ENDPOINTS.get(name, name),
                str(stats["requests"]),
                str(stats["ok"]),
                str(stats["errors"]),
                str(stats["timeouts"]),
                str(stats["torn"]),
                _num(stats["rate_rps"]),
                *(_num(lat[f"p{p}"]) for p in PERCENTILES),
                *(_num(first.get(f"p{p}")) for p in PERCENTILES),
            ]
        )
    return rows


def table(report: dict[str, Any]) -> str:
    """A plain-text table for the terminal, then the totals and the servers' figures."""
    rows = [list(_COLUMNS), *_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    return "\n".join([*lines, "", *_closing(report)])


def markdown(report: dict[str, Any]) -> str:
    """report.md: the run's settings, the endpoint table, stage times, servers, verdict."""
    run = report["run"]
    out = [
        f"# knowhub load test, {report['date']}",
        "",
        f"`{report['command']}`",
        "",
        f"{run['clients']} clients for {run['duration_s']} s (ran {report['wall_s']} s), "
        f"per-request timeout {run['timeout_s']} s, writer: {run['writer'] or 'none'}.",
        "",
        _md_table(list(_COLUMNS), _rows(report)),
        "",
        "Per-stage times of successful responses (`timings_ms`, p50 / p95 ms):",
        "",
        _md_table(["endpoint", "stage", "p50", "p95"], list(_stage_rows(report))),
        "",
        *(f"- {line}" for line in _closing(report)),
    ]
    for name, stats in report["endpoints"].items():
        for error, count in stats["error_kinds"].items():
            out.append(f"- {ENDPOINTS.get(name, name)}: {count} x {error}")
    return "\n".join(out) + "\n"


def _stage_rows(report: dict[str, Any]) -> Iterable[list[str]]:
    for name, stats in report["endpoints"].items():
        for stage, ms in stats["stages_ms"].items():
            yield [ENDPOINTS.get(name, name), stage, _num(ms["p50"]), _num(ms["p95"])]


def _closing(report: dict[str, Any]) -> list[str]:
    total, client, machine = report["total"], report["load_generator"], report["machine"]
    lines = [
        f"total: {total['requests']} requests, {total['ok']} ok "
        f"({_pct(total['success_rate'])}), {total['throughput_rps']} ok/s, "
        f"{total['timeouts']} timeouts, {total['torn']} torn, {report['hung']} hung at the "
        f"hard stop; longest stall with nothing finishing {total['longest_stall_s']} s",
        f"load generator: CPU {client['cpu_pct']} %, event-loop lag p50 "
        f"{client['loop_lag_ms']['p50']} ms, max {client['loop_lag_ms']['max']} ms; machine: "
        f"{machine['cpus']} CPUs, load average {machine['loadavg_1m_before']} before, "
        f"{machine['loadavg_1m_after']} after",
    ]
    if (client["loop_lag_ms"]["p50"] or 0) > LAG_WARNING_MS:
        lines.append(
            "the load generator was short of CPU (its event loop ran late): latencies include "
            "its own delay; run fewer clients, or on a quieter machine"
        )
    for name, stats in report["servers"].items():
        lines.append(
            f"{name} server (pid {stats['pid']}): idle RSS {stats['idle_rss_mb']} MB and CPU "
            f"{stats['idle_cpu_pct']} %; under load RSS peak "
            f"{stats['peak_rss_mb']} MB (bound {stats['rss_bound_mb']} MB), after "
            f"{stats['after_rss_mb']} MB; CPU mean {stats['cpu_mean_pct']} %, peak "
            f"{stats['cpu_peak_pct']} % (100 % = one core)"
        )
    verdict = report["goal"]
    lines.append(
        ("goal met" if verdict["passed"] else "goal NOT met: " + "; ".join(verdict["failures"]))
        + f" (success >= {_pct(verdict['min_success'])}, no timeout, no torn result, "
        "bounded memory)"
    )
    return lines


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.2f} %"


def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / MB, 1)
