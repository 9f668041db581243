"""``knowhub bench load`` against a real ``serve http`` and a real ``serve mcp --transport
http`` sharing one data dir, with the concurrent writer on: a short run must reach every
endpoint, fail nothing and report sane figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import cli_env, free_port, write
from tests.http_helpers import FULL, TOKEN_ENV, api_server, build_corpus
from tests.mcp_helpers import http_server, wait_until

# About the corpus of build_corpus (ops.md, hr.md), in English: no tokenizer warm-up needed.
QUERIES = (
    "How long are backups kept?\nannual leave days\nVPN console access\nbackups every 6 hours\n"
)


def test_short_load_reaches_every_endpoint_and_reports_sane_figures(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)  # docs/ops.md, docs/team/hr.md in 'default'
    write(tmp_path / "queries.txt", QUERIES)
    servers: dict[str, Any] = {"cwd": tmp_path, "data_dir": data, "env": TOKEN_ENV, "token": FULL}
    with (
        http_server("--docs", "docs", **servers) as mcp,
        api_server(**servers) as api,
    ):
        wait_until(lambda: not mcp.get("/health").json().get("indexing"))
        run = _bench(
            tmp_path,
            "--url",
            api.url,
            "--mcp-url",
            mcp.url + "/mcp",
            "--clients",
            "5",
            "--duration",
            "3",
            "--writer",
            "docs/load-note.md",
            "--writer-interval",
            "0.3",
            "--queries",
            "queries.txt",
            "--token-env",
            "KH_TEST_API_FULL",
            "--out",
            "report",
        )
        documents = api.get("/api/documents").json()["documents"]
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "report/report.json").read_text(encoding="utf-8"))
    assert report["goal"]["passed"], report["goal"]
    assert report["hung"] == 0 and report["total"]["torn"] == 0
    assert set(report["endpoints"]) == {
        "health",
        "search",
        "retrieval_debug",
        "ask",
        "ask_sse",
        "ws_stream",
        "mcp_query",
        "writer",
    }
    for name, stats in report["endpoints"].items():
        _sane(name, stats)
    for name in ("ask_sse", "ws_stream"):
        first = report["endpoints"][name]["first_token_ms"]
        assert 0 < first["p50"] <= report["endpoints"][name]["latency_ms"]["p99"], name
    assert "lexical" in report["endpoints"]["search"]["stages_ms"]
    for name in ("http", "mcp"):
        server = report["servers"][name]
        assert 10 < server["idle_rss_mb"] <= server["peak_rss_mb"] < 2000, server
        assert server["cpu_mean_pct"] >= 0 and server["memory_bounded"], server
    assert "load-note.md" in {d["source"] for d in documents}  # the writer's file, ingested
    assert "POST /api/ask (SSE)" in (tmp_path / "report/report.md").read_text(encoding="utf-8")
    assert FULL not in run.stdout + run.stderr + json.dumps(report)


def _sane(name: str, stats: dict[str, Any]) -> None:
    assert stats["ok"] > 0 and stats["ok"] == stats["requests"], (name, stats)
    assert stats["errors"] == stats["timeouts"] == stats["torn"] == 0, (name, stats)
    latency = stats["latency_ms"]
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"] < 30_000, name
    assert stats["rate_rps"] > 0, name


def _bench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env({**TOKEN_ENV})
    return subprocess.run(
        [sys.executable, "-m", "knowhub", "--data-dir", "data", "bench", "load", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unreachable_server_stops_at_the_preflight_with_the_reason(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    run = _bench(tmp_path, "--url", url, "--no-server-stats", "--duration", "1")
    assert run.returncode == 1
    assert "preflight: GET /health failed" in run.stderr and "ConnectError" in run.stderr


def test_make_load_runs_both_servers_and_the_bench_from_a_clone(tmp_path: Path) -> None:
    # The README's one command, `make load CLIENTS=100 DURATION=60`, runs this script.
    root = Path(__file__).resolve().parents[2]
    dry = subprocess.run(
        ["make", "-n", "load", "CLIENTS=3", "DURATION=2"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "benchmarks/load_run.py --clients 3 --duration 2" in dry.stdout
    run = subprocess.run(
        [
            sys.executable,
            "benchmarks/load_run.py",
            "--clients",
            "3",
            "--duration",
            "2",
            "--out",
            str(tmp_path / "report"),
        ],
        cwd=root,
        env=cli_env({}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "report/report.json").read_text(encoding="utf-8"))
    assert report["goal"]["passed"] and report["endpoints"]["writer"]["ok"] > 0, report["goal"]
    assert {"server-http.log", "server-mcp.log"} <= {
        p.name for p in (tmp_path / "report").iterdir()
    }
