"""Every search, answer and ingest leaves a trace; `knowhub traces` reads them back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from knowhub.testing.llm_server import closed_url, serve
from tests.helpers import knowhub, write
from tests.mcp_helpers import stdio_params
from tests.otlp_receiver import otlp_receiver

SECRET = "sk-live-0123456789abcdef"
LONG = " ".join(f"Paragraph sentence number {i} about the gearbox maintenance." for i in range(40))


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    write(tmp_path / "docs/ops.md", "# Ops\n\n## Backups\n\nDatabase backups run every 6 hours.\n")
    write(tmp_path / "docs/gearbox.md", f"# Gearbox\n\n{LONG}\n")
    assert knowhub("ingest", "docs", cwd=tmp_path).returncode == 0
    return tmp_path


def _traces(kb: Path, *args: str) -> dict[str, Any]:
    result = knowhub("traces", "--json", *args, cwd=kb)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_each_run_is_traced_and_summarised(kb: Path) -> None:
    assert knowhub("search", "database backups", cwd=kb).returncode == 0
    assert knowhub("ask", "How often do database backups run?", cwd=kb).returncode == 0
    assert knowhub("search", "x", "--collection", "nope", cwd=kb).returncode == 1
    data = _traces(kb)
    summary, runs = data["summary"], data["traces"]
    assert summary["count"] == 4 and summary["errors"] == 1
    assert summary["by_kind"] == {"answer": 1, "ingest": 1, "search": 2}
    assert {"lexical", "dense", "fusion", "query_embedding"} <= set(summary["stages_ms"])
    assert summary["slowest_stage"] in summary["stages_ms"]
    failed, answer, search, ingest = runs  # newest first
    assert failed["error"].startswith("unknown collection 'nope'") and failed["kb_version"] is None
    assert answer["kind"] == "answer" and answer["interface"] == "cli"
    assert answer["hit_type"] == "rag" and answer["intent"] == "search"
    assert answer["sources_count"] >= 1 and answer["source_ids"][0].count("_") == 2
    assert answer["confidence"] > 0 and answer["top_source_score"] is not None
    # The extractive answer quotes its source: verified; no LLM, so no prompt profile.
    assert answer["generation_verification_status"] == "verified"
    assert answer["verification_score"] == 1.0 and answer["reasons"] == []
    assert answer["answer_confidence"] == answer["evidence_confidence"] == answer["confidence"]
    assert answer["question_category"] == "general" and answer["prompt_profile"] is None
    revision = json.loads(knowhub("collections", "--json", cwd=kb).stdout)[0]["version"]
    read = {"collection": "default", "version": 1, "physical": "default", "revision": revision}
    assert answer["kb_version"] == read and answer["model"] == "extractive"
    assert {"routing", "lexical", "dense", "fusion", "extractive"} <= set(answer["stages_ms"])
    assert search["stage_hits"]["lexical"] >= 1 and search["cache"]["result"] == "miss"
    assert search["query"] == "database backups" and search["duration_ms"] > 0
    assert ingest["kind"] == "ingest" and ingest["ingest"]["added"] == 2
    assert [r["kind"] for r in _traces(kb, "--kind", "search")["traces"]] == ["search", "search"]
    assert len(_traces(kb, "--errors")["traces"]) == 1
    assert _traces(kb, "--slow", "100000")["traces"] == []
    assert _traces(kb, "--since", "1h")["summary"]["count"] == 4
    text = knowhub("traces", cwd=kb).stdout
    assert "4 runs (1 failed)" in text and "p95 ms" in text and "slowest stage" in text


def test_show_draws_a_waterfall_and_save_case_feeds_eval(kb: Path) -> None:
    knowhub("ask", "How often do database backups run?", cwd=kb)
    trace_id = _traces(kb, "--kind", "answer")["traces"][0]["trace_id"]
    shown = knowhub("traces", "show", trace_id[:8], cwd=kb)
    assert shown.returncode == 0, shown.stderr
    assert f"trace {trace_id}  answer via cli" in shown.stdout
    assert "hit_type rag" in shown.stdout and "█" in shown.stdout and "lexical" in shown.stdout
    assert knowhub("traces", "show", "abc", cwd=kb).returncode == 1
    missing = knowhub("traces", "show", "ffffffffff", cwd=kb)
    assert missing.returncode == 1 and "no trace with id" in missing.stderr
    saved = knowhub("traces", "save-case", trace_id, "--expected", "ops.md", cwd=kb)
    assert saved.returncode == 0 and "added case-1 in golden.json" in saved.stdout
    again = knowhub("traces", "save-case", trace_id, "--expected", "ops.md", cwd=kb)
    assert "updated case-1" in again.stdout
    golden = json.loads((kb / "golden.json").read_text())
    assert golden == [
        {
            "id": "case-1",
            "query": "How often do database backups run?",
            "expected_sources": ["ops.md"],
            "collection": "default",  # the trace's: judged only on that collection
        }
    ]
    evaluated = knowhub("eval", "golden.json", "--collection", "default", "--json", cwd=kb)
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["metrics"]["hit_rate@10"] == 1.0
    ingest_id = _traces(kb, "--kind", "ingest")["traces"][0]["trace_id"]
    refused = knowhub("traces", "save-case", ingest_id, "--expected", "x", cwd=kb)
    assert refused.returncode == 1 and "has no query" in refused.stderr


def test_traces_hold_no_secret_and_no_document_text(kb: Path) -> None:
    env = {
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__MODEL": "m",
        "KNOWHUB_LLM__API_KEY_ENV": "MY_LLM_KEY",
        "MY_LLM_KEY": SECRET,
        "KNOWHUB_LLM__BACKOFF_S": "0",
    }
    with serve(answer=LONG[:900] + " [1]", echo_key=True, api_key="other") as server:
        env["KNOWHUB_LLM__BASE_URL"] = server.openai_base
        failed = knowhub("ask", "gearbox maintenance paragraph", cwd=kb, env=env)
    assert failed.returncode == 1  # the fake server refuses the key (and echoes it)
    with serve(answer=LONG[:900] + " [1]") as server:
        env["KNOWHUB_LLM__BASE_URL"] = server.openai_base
        answered = knowhub("ask", "gearbox maintenance paragraph", cwd=kb, env=env)
    assert answered.returncode == 0, answered.stderr
    raw = "".join(p.read_text() for p in (kb / "data" / "traces").glob("*.jsonl"))
    assert "gearbox maintenance paragraph" in raw  # the runs are there
    assert SECRET not in raw
    assert not any(LONG[i : i + 200] in raw for i in range(0, len(LONG) - 200, 50))


def test_otlp_gets_one_span_per_stage_and_langsmith_failures_do_not_break_runs(
    kb: Path,
) -> None:
    with otlp_receiver() as (endpoint, received):
        env = {
            "KNOWHUB_TRACE__OTLP_ENDPOINT": endpoint,
            "KNOWHUB_TRACE__LANGSMITH_API_KEY_ENV": "LS_KEY",
            "LS_KEY": "ls-secret-key",
            "KNOWHUB_TRACE__LANGSMITH_ENDPOINT": closed_url(),
        }
        result = knowhub("search", "database backups", cwd=kb, env=env)
    assert result.returncode == 0, result.stderr
    assert "ls-secret-key" not in result.stderr
    spans = [
        s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    root = next(s for s in spans if s.name == "knowhub.search")
    children = {s.name for s in spans if s.parent_span_id == root.span_id}
    assert {"lexical", "dense", "fusion"} <= children
    attributes = {a.key: a.value for a in root.attributes}
    assert attributes["knowhub.collection"].string_value == "default"
    assert attributes["knowhub.interface"].string_value == "cli"
    assert attributes["knowhub.kb_version"].int_value == 1
    assert attributes["knowhub.kb_physical"].string_value == "default"


@pytest.mark.anyio
async def test_mcp_runs_are_traced_as_mcp(kb: Path) -> None:
    params = stdio_params(
        "--data-dir", str(kb / "data"), "serve", "mcp", "--docs", str(kb / "docs"), cwd=kb
    )
    async with Client(params) as client:
        result = await client.call_tool("query_knowledge_hub", {"query": "database backups"})
        assert not result.is_error
    interfaces = {t["interface"] for t in _traces(kb, "--kind", "search")["traces"]}
    assert interfaces == {"mcp"}
