"""`knowhub search --explain` as a user runs it, with reranking off, working and failing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import reranking
from tests.helpers import knowhub, write

QUERY = "database backup schedule"


@pytest.fixture
def ingested(tmp_path: Path) -> Path:
    write(tmp_path / "docs/a.md", "Database backup. Database backup, database backup.\n")
    write(tmp_path / "docs/b.md", "Lunch menu for the cafeteria, and the schedule of lunch.\n")
    write(tmp_path / "docs/c.md", "The database backup runs on a schedule: every six hours.\n")
    assert knowhub("ingest", str(tmp_path / "docs"), cwd=tmp_path).returncode == 0
    return tmp_path


def explain_lines(stdout: str) -> list[str]:
    return [line.strip() for line in stdout.splitlines() if line.strip().startswith("explain:")]


def test_explain_shows_leg_ranks_fused_score_and_rerank_off(ingested: Path) -> None:
    result = knowhub("search", QUERY, "--explain", "-k", "3", cwd=ingested)
    assert result.returncode == 0, result.stderr
    lines = explain_lines(result.stdout)
    assert len(lines) == 3
    assert re.fullmatch(
        r"explain: lexical #\d+ · dense #\d+ · fused \d\.\d{3} \(#1\) · rerank: off", lines[0]
    ), lines[0]
    assert "rerank off" in result.stdout and "ms: routing" in result.stdout
    # a fresh process: nothing cached yet, and the trace says so
    assert "cache: result miss, query_embedding miss" in result.stdout
    plain = knowhub("search", QUERY, "-k", "3", cwd=ingested).stdout
    assert "explain:" not in plain and "ms: routing" not in plain


def test_json_explain_adds_the_fields_per_hit(ingested: Path) -> None:
    hits = json.loads(knowhub("search", QUERY, "--json", "--explain", cwd=ingested).stdout)
    assert hits
    first = hits[0]["explain"]
    assert first["rank"] == 1 and first["fused_rank"] == 1 and first["rerank"] == "off"
    assert first["fused_score"] == hits[0]["fused_score"] == hits[0]["score"]
    for key in ("lexical_rank", "dense_rank", "dense_used", "rerank_score", "rerank_error"):
        assert key in first
    plain = json.loads(knowhub("search", QUERY, "--json", cwd=ingested).stdout)
    assert "explain" not in plain[0] and plain[0]["fused_rank"] == 1


def test_explain_shows_how_the_reranker_moved_each_hit(ingested: Path) -> None:
    with reranking.serve(reranking.jina) as server:
        env = {
            "KNOWHUB_RERANKER__PROVIDER": "http",
            "KNOWHUB_RERANKER__HTTP__URL": server.url + "/v1/rerank",
            "KNOWHUB_RERANKER__HTTP__MODEL": "jina-reranker-v2-base-multilingual",
            "KNOWHUB_RERANKER__HTTP__API_KEY_ENV": "JINA_API_KEY",
            "JINA_API_KEY": "jina_secret_key",
        }
        text = knowhub("search", QUERY, "--explain", "-k", "3", cwd=ingested, env=env)
        data = knowhub("search", QUERY, "--explain", "--json", "-k", "3", cwd=ingested, env=env)
    assert text.returncode == 0, text.stderr
    moves = [
        re.search(r"rerank (\d) → (\d) \(-?\d+\.\d{3}\)", ln) for ln in explain_lines(text.stdout)
    ]
    assert all(moves) and [int(m.group(2)) for m in moves if m] == [1, 2, 3]
    assert sorted(int(m.group(1)) for m in moves if m) == [1, 2, 3]
    assert "rerank http (" in text.stdout
    hits = json.loads(data.stdout)
    assert hits[0]["source"] == "c.md" and hits[0]["explain"]["rerank"].endswith("→ 1")
    assert hits[0]["rerank_score"] == hits[0]["score"] != hits[0]["fused_score"]
    assert server.requests[0][1]["Authorization"] == "Bearer jina_secret_key"
    assert "jina_secret_key" not in text.stdout + text.stderr + data.stdout + data.stderr


def test_explain_says_when_reranking_failed_and_the_search_still_answers(ingested: Path) -> None:
    env = {
        "KNOWHUB_RERANKER__PROVIDER": "http",
        "KNOWHUB_RERANKER__HTTP__URL": reranking.closed_port_url(),
    }
    result = knowhub("search", QUERY, "--explain", "-k", "3", cwd=ingested, env=env)
    assert result.returncode == 0, result.stderr
    lines = explain_lines(result.stdout)
    assert len(lines) == 3 and all(
        "rerank failed: reranker http (jina): cannot reach" in ln for ln in lines
    )
    assert "fused order kept" in result.stdout
    assert "(#1)" in lines[0] and "(#3)" in lines[2]  # fused order
    assert "Traceback" not in result.stderr
    hits = json.loads(knowhub("search", QUERY, "--explain", "--json", cwd=ingested, env=env).stdout)
    assert hits[0]["explain"]["rerank"] == "failed"
    assert "cannot reach" in hits[0]["explain"]["rerank_error"]
