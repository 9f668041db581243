"""``report.html``: one self-contained page (inline CSS and SVG; no script, no network).

Metric bars with the baseline (black tick) and the gate minimum (red dashed tick), a
latency table and histogram, and every query, worst first, misses highlighted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from knowhub.eval.answer_report import answer_cases_html, is_answers
from knowhub.eval.gate import bound

__all__ = ["histogram", "render_html"]

BAR_WIDTH = 360
ROW = 26
BINS = 20

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 6px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.miss td { background: #fde2e2; }
.pass { color: #137333; font-weight: 600; } .fail { color: #b3261e; font-weight: 600; }
.muted { color: #666; } code { font-size: 0.92em; }
"""


def render_html(report: Mapping[str, Any]) -> str:
    """The whole page for one report dict."""
    split = f" ({report['split']})" if report.get("split") else ""
    title = f"knowhub eval: {report['name']}{split}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        _summary(report),
        _gate(report),
        "<h2>Metrics</h2>",
        _metric_bars(report),
        "<h2>Latency</h2>",
        _latency_table(report["latency_ms"]),
        _histogram_svg([q["latency_ms"].get("total", 0.0) for q in report.get("per_query", [])]),
        answer_cases_html(report) if is_answers(report) else _queries(report),
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _summary(report: Mapping[str, Any]) -> str:
    facts = [
        f"{report['queries']} {'cases answered' if is_answers(report) else 'queries'}",
        f"collection <code>{escape(report['collection'])}</code>",
        *([] if is_answers(report) else [f"top {report['top_k']} hits"]),
        escape(str(report.get("created", ""))),
    ]
    if report.get("documents"):
        facts.insert(1, f"{report['documents']} documents")
    items = [", ".join(facts)]
    for label, values in (("settings", report.get("context")), ("ingest", report.get("ingest"))):
        if values:
            items.append(
                f"{label}: "
                + ", ".join(f"{escape(str(k))} {escape(str(v))}" for k, v in values.items())
            )
    baseline = report.get("baseline")
    if baseline:
        items.append(f"baseline: <code>{escape(baseline['path'])}</code> ({baseline['created']})")
    return "".join(f'<p class="muted">{item}</p>' for item in items)


def _gate(report: Mapping[str, Any]) -> str:
    gate = report.get("gate")
    if not gate:
        return ""
    if gate["passed"]:
        return f'<p class="pass">Gate {escape(gate["key"])}: passed</p>'
    failures = "".join(f"<li>{escape(f)}</li>" for f in gate["failures"])
    return f'<p class="fail">Gate {escape(gate["key"])}: failed</p><ul>{failures}</ul>'


def _metric_bars(report: Mapping[str, Any]) -> str:
    metrics: Mapping[str, float] = report["metrics"]
    compared = report.get("baseline", {}).get("metrics", {})
    thresholds = report.get("gate", {}).get("thresholds", {})
    left, height = 120, ROW * len(metrics) + 10
    rows = []
    for i, (name, value) in enumerate(metrics.items()):
        y = 5 + i * ROW
        x_end = left + BAR_WIDTH * max(0.0, min(1.0, value))
        label = f"{value:.4f}"
        if name in compared:
            label += f" ({compared[name]['delta']:+.4f})"
        rows += [
            f'<text x="0" y="{y + 15}">{escape(name)}</text>',
            f'<rect x="{left}" y="{y}" width="{BAR_WIDTH}" height="18" fill="#eee"/>',
            f'<rect x="{left}" y="{y}" width="{x_end - left:.1f}" height="18" fill="#4a7bd0"/>',
            f'<text x="{left + BAR_WIDTH + 8}" y="{y + 15}">{label}</text>',
        ]
        if name in compared:
            x = left + BAR_WIDTH * compared[name]["baseline"]
            rows.append(_tick(x, y, "#000", "", "baseline"))
        if name in thresholds:
            x = left + BAR_WIDTH * thresholds[name]
            limit = "maximum" if bound(name) == "≤" else "minimum"
            rows.append(_tick(x, y, "#d93025", ' stroke-dasharray="3,2"', f"gate {limit}"))
    width = left + BAR_WIDTH + 160
    return _svg(width, height, "metrics", rows)


def _tick(x: float, y: int, color: str, extra: str, title: str) -> str:
    return (
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 3}" y2="{y + 21}" stroke="{color}" '
        f'stroke-width="2"{extra}><title>{title}</title></line>'
    )


def _latency_table(latency: Mapping[str, Mapping[str, float]]) -> str:
    rows = "".join(
        f'<tr><td>{escape(stage)}</td><td class="num">{v["p50"]:.1f}</td>'
        f'<td class="num">{v["p95"]:.1f}</td></tr>'
        for stage, v in latency.items()
    )
    return f"<table><tr><th>stage</th><th>p50 ms</th><th>p95 ms</th></tr>{rows}</table>"


def histogram(values: Sequence[float], bins: int = BINS) -> tuple[float, float, list[int]]:
    """Equal-width bins from min to max of ``values``: (start, bin width, counts)."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    width = (high - low) / bins if high > low else 1.0
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / width), bins - 1)] += 1
    return low, width, counts


def _histogram_svg(values: Sequence[float]) -> str:
    if not values:
        return ""
    low, width, counts = histogram(values)
    most, plot_h, bar_w = max(counts), 120, 30
    rows = []
    for i, count in enumerate(counts):
        h = plot_h * count / most
        x = 40 + i * bar_w
        rows.append(
            f'<rect x="{x}" y="{10 + plot_h - h:.1f}" width="{bar_w - 2}" height="{h:.1f}" '
            f'fill="#4a7bd0"><title>{low + i * width:.1f}-{low + (i + 1) * width:.1f} ms: {count}'
            "</title></rect>"
        )
    axis_y = plot_h + 28
    rows += [
        f'<text x="40" y="{axis_y}">{low:.1f} ms</text>',
        f'<text x="{40 + BINS * bar_w}" y="{axis_y}" text-anchor="end">'
        f"{low + width * BINS:.1f} ms</text>",
        f'<text x="0" y="20">{most}</text>',
    ]
    caption = '<p class="muted">Total time per query (count per bin).</p>'
    return _svg(60 + BINS * bar_w, plot_h + 36, "latency histogram", rows) + caption


def _svg(width: int | float, height: int | float, label: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{label}" font-size="13">' + "".join(body) + "</svg>"
    )


def _queries(report: Mapping[str, Any]) -> str:
    queries = sorted(report.get("per_query", []), key=lambda q: (q["metrics"]["ndcg@10"], q["qid"]))
    if not queries:
        return ""
    misses = sum(1 for q in queries if q["metrics"]["ndcg@10"] == 0)
    head = (
        f"<h2>Queries, worst first ({misses} misses highlighted)</h2><table><tr><th>id</th>"
        "<th>query</th><th>nDCG@10</th><th>first relevant</th><th>expected</th>"
        "<th>top 3</th></tr>"
    )
    rows = []
    for q in queries:
        miss = ' class="miss"' if q["metrics"]["ndcg@10"] == 0 else ""
        rank = q["first_relevant_rank"] or "–"
        rows.append(
            f"<tr{miss}><td>{escape(q['qid'])}</td><td>{escape(q['query'])}</td>"
            f'<td class="num">{q["metrics"]["ndcg@10"]:.3f}</td><td class="num">{rank}</td>'
            f"<td>{escape(', '.join(q['relevant']))}</td>"
            f"<td>{escape(', '.join(q['ranked'][:3]))}</td></tr>"
        )
    return head + "".join(rows) + "</table>"
