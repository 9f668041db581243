"""Reports: JSON, Markdown and a self-contained HTML page; baselines and their deltas."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from knowhub.errors import ConfigError
from knowhub.eval.html import histogram, render_html
from knowhub.eval.report import compare, load_report, render_markdown, write_reports


def query(qid: str, ndcg: float, total: float = 5.0) -> dict[str, Any]:
    first = None if ndcg == 0 else 1
    return {
        "qid": qid,
        "query": f"question <{qid}>",
        "metrics": {"ndcg@10": ndcg},
        "ranked": ["x.md", "y.md"],
        "relevant": {"a.md": 1},
        "first_relevant_rank": first,
        "latency_ms": {"total": total},
    }


def report(**metrics: float) -> dict[str, Any]:
    values = {"ndcg@10": 0.5, "recall@10": 0.8, **metrics}
    return {
        "name": "set",
        "split": "test",
        "source": "/d/set",
        "collection": "eval-set",
        "top_k": 100,
        "queries": 3,
        "documents": 10,
        "params": {},
        "context": {"embedder": "x"},
        "created": "2025-01-01T00:00:00+00:00",
        "ingest": {"added": 10, "embedded": 12},
        "metrics": values,
        "latency_ms": {"lexical": {"p50": 1.0, "p95": 2.0}, "total": {"p50": 5.0, "p95": 9.0}},
        "per_query": [query("q1", 1.0, 3.0), query("q2", 0.0, 9.0), query("q3", 0.5, 4.0)],
    }


def test_compare_gives_deltas_and_queries_that_changed(tmp_path: Path) -> None:
    before = report(**{"ndcg@10": 0.6})
    before["per_query"][1] = query("q2", 0.3)
    before["per_query"][2] = query("q3", 0.0)
    deltas = compare(report(), before, tmp_path / "b.json")
    assert deltas["metrics"]["ndcg@10"] == {"baseline": 0.6, "delta": -0.1}
    assert deltas["newly_missed"] == ["q2"] and deltas["newly_found"] == ["q3"]
    assert deltas["latency_total_delta_ms"] == {"p50": 0.0, "p95": 0.0}


def test_baseline_of_another_data_set_is_refused(tmp_path: Path) -> None:
    other = {**report(), "name": "scifact"}
    with pytest.raises(ConfigError, match=r"b.json: baseline is for 'scifact' \(test\)"):
        compare(report(), other, tmp_path / "b.json")


def test_load_report_names_the_bad_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.json: no such baseline"):
        load_report(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text('{\n  "metrics": ,\n}')
    with pytest.raises(ConfigError, match=r"bad.json:2: not valid JSON"):
        load_report(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ConfigError, match=r"list\.json: not a knowhub eval report"):
        load_report(tmp_path / "list.json")


def test_write_reports_writes_json_markdown_and_html(tmp_path: Path) -> None:
    files = write_reports(report(), tmp_path / "out")
    assert [f.name for f in files] == ["report.json", "report.md", "report.html"]
    assert json.loads((tmp_path / "out" / "report.json").read_text())["metrics"]["ndcg@10"] == 0.5


def test_html_is_self_contained_with_wellformed_svg_and_highlighted_misses() -> None:
    data = report()
    data["baseline"] = compare(report(), report(**{"ndcg@10": 0.4}), Path("b.json"))
    data["gate"] = {
        "key": "set",
        "passed": False,
        "thresholds": {"ndcg@10": 0.6},
        "failures": ["ndcg@10 0.500 < 0.600 (-0.100)"],
    }
    page = render_html(data)
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"(src|href)=", page)
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"] * 2
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.DOTALL)
    assert len(svgs) == 2  # metric bars, latency histogram
    for svg in svgs:
        ET.fromstring(svg)
    assert page.count('<tr class="miss">') == 1 and "question &lt;q2&gt;" in page
    assert "(+0.1000)" in page and "ndcg@10 0.500 &lt; 0.600 (-0.100)" in page
    assert page.index("q2") < page.index("q3") < page.index("q1")  # worst first


def test_markdown_lists_gate_failures_and_misses() -> None:
    data = report()
    data["gate"] = {
        "key": "set",
        "passed": False,
        "thresholds": {"ndcg@10": 0.6},
        "failures": ["ndcg@10 0.500 < 0.600 (-0.100)"],
    }
    text = render_markdown(data)
    assert "| ndcg@10 | 0.5000 |  |  | ≥ 0.600 ❌ |" in text
    assert "- ndcg@10 0.500 < 0.600 (-0.100)" in text
    assert "## Misses: 1 queries" in text and "`q2`" in text


def test_histogram_puts_every_value_in_a_bin() -> None:
    low, width, counts = histogram([2.0, 3.0, 7.0, 12.0], bins=10)
    assert (low, width) == (2.0, 1.0) and counts[0] == counts[1] == counts[5] == counts[-1] == 1
    assert histogram([]) == (0.0, 1.0, [0] * 20)
    assert histogram([4.0, 4.0]) == (4.0, 1.0, [2] + [0] * 19)
