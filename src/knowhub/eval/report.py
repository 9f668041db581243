"""Evaluation reports: ``report.json`` (the data), ``report.md`` and ``report.html`` (views).

Everything here works on the JSON-ready dict of :meth:`EvalResult.to_dict`, so a saved
report is also a baseline: ``compare`` puts a previous report's numbers beside this one's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from knowhub.errors import ConfigError
from knowhub.eval.answer_report import answer_cases_markdown, is_answers, shortfall
from knowhub.eval.gate import bound, meets
from knowhub.eval.html import render_html

__all__ = ["compare", "load_report", "render_markdown", "write_reports"]

MISS_LIMIT = 50  # misses listed in report.md; report.html lists every query


def load_report(path: Path) -> dict[str, Any]:
    """Read a ``report.json`` (e.g. a baseline), checking it is one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such baseline; save one with --save-baseline") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not readable ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise ConfigError(f'{path}: not a knowhub eval report (no "metrics" object)')
    return data


def compare(current: Mapping[str, Any], baseline: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Deltas of ``current`` against ``baseline`` (same data set and split, or an error)."""
    if (baseline.get("name"), baseline.get("split")) != (current["name"], current["split"]):
        raise ConfigError(
            f"{path}: baseline is for {baseline.get('name')!r} ({baseline.get('split')}), this "
            f"run is {current['name']!r} ({current['split']}); choose the matching baseline"
        )
    before = {k: v for k, v in baseline["metrics"].items() if isinstance(v, int | float)}
    metrics = {
        name: {"baseline": before[name], "delta": round(value - before[name], 6)}
        for name, value in current["metrics"].items()
        if name in before
    }
    old_total = baseline.get("latency_ms", {}).get("total", {})
    new_total = current["latency_ms"].get("total", {})
    latency = {
        p: round(new_total[p] - old_total[p], 3)
        for p in ("p50", "p95")
        if p in old_total and p in new_total
    }
    # A miss: a query with nothing relevant in its top 10, or an answer case that fell short.
    old_miss = {q["qid"]: shortfall(q) for q in baseline.get("per_query", [])}
    new_miss = {q["qid"]: shortfall(q) for q in current.get("per_query", [])}
    common = sorted(old_miss.keys() & new_miss.keys())
    return {
        "path": str(path),
        "created": baseline.get("created"),
        "metrics": metrics,
        "latency_total_delta_ms": latency,
        "newly_missed": [q for q in common if new_miss[q] and not old_miss[q]],
        "newly_found": [q for q in common if old_miss[q] and not new_miss[q]],
    }


def write_reports(report: Mapping[str, Any], folder: Path) -> list[Path]:
    """Write report.json, report.md and report.html into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "report.json": json.dumps(report, ensure_ascii=False, indent=2),
        "report.md": render_markdown(report),
        "report.html": render_html(report),
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return [folder / name for name in files]


def render_markdown(report: Mapping[str, Any]) -> str:
    """A Markdown summary: metrics (with deltas and gate), latency, misses."""
    split = f" ({report['split']})" if report.get("split") else ""
    lines = [
        f"# Evaluation: {report['name']}{split}",
        "",
        _summary_line(report),
        *_context_lines(report),
        "",
        "| metric | value | baseline | delta | gate |",
        "|---|---|---|---|---|",
    ]
    compared = report.get("baseline", {}).get("metrics", {})
    thresholds = report.get("gate", {}).get("thresholds", {})
    for name, value in report["metrics"].items():
        base = compared.get(name)
        gate = f"{bound(name)} {thresholds[name]:.3f}" if name in thresholds else ""
        if name in thresholds:
            gate += " ✅" if meets(name, value, thresholds[name]) else " ❌"
        lines.append(
            f"| {name} | {value:.4f} | {_fmt(base, 'baseline')} | {_fmt(base, 'delta', '+')} "
            f"| {gate} |"
        )
    lines += ["", "| stage | p50 ms | p95 ms |", "|---|---|---|"]
    lines += [f"| {s} | {v['p50']:.1f} | {v['p95']:.1f} |" for s, v in report["latency_ms"].items()]
    lines += _gate_lines(report)
    lines += answer_cases_markdown(report) if is_answers(report) else _miss_lines(report)
    return "\n".join(lines) + "\n"


def _summary_line(report: Mapping[str, Any]) -> str:
    if is_answers(report):
        return (
            f"{report['queries']} cases answered from collection `{report['collection']}`; "
            f"{report['created']}."
        )
    return (
        f"{report['queries']} queries against collection `{report['collection']}`"
        f"{_documents(report)}; top {report['top_k']} hits per query; {report['created']}."
    )


def _documents(report: Mapping[str, Any]) -> str:
    return f" ({report['documents']} documents)" if report.get("documents") else ""


def _context_lines(report: Mapping[str, Any]) -> list[str]:
    context = report.get("context") or {}
    ingest = report.get("ingest")
    lines = []
    if context:
        lines.append("Settings: " + ", ".join(f"{k} `{v}`" for k, v in context.items()) + ".")
    if ingest:
        lines.append("Ingest: " + ", ".join(f"{v} {k}" for k, v in ingest.items()) + ".")
    return lines


def _fmt(entry: Mapping[str, float] | None, key: str, sign: str = "") -> str:
    return f"{entry[key]:{sign}.4f}" if entry else ""


def _gate_lines(report: Mapping[str, Any]) -> list[str]:
    gate = report.get("gate")
    if not gate:
        return []
    if gate["passed"]:
        return ["", f"Gate `{gate['key']}`: passed."]
    return ["", f"Gate `{gate['key']}`: **failed**", "", *(f"- {f}" for f in gate["failures"])]


def _miss_lines(report: Mapping[str, Any]) -> list[str]:
    misses = [q for q in report.get("per_query", []) if q["metrics"]["ndcg@10"] == 0]
    if not misses:
        return []
    lines = ["", f"## Misses: {len(misses)} queries with nothing relevant in the top 10", ""]
    for query in misses[:MISS_LIMIT]:
        expected = ", ".join(query["relevant"])
        got = ", ".join(query["ranked"][:3])
        lines.append(f"- `{query['qid']}` {query['query']!r}: expected {expected}; got {got}")
    if len(misses) > MISS_LIMIT:
        lines.append(f"- … and {len(misses) - MISS_LIMIT} more (see report.html)")
    return lines
