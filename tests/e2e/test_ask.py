"""`knowhub ask` as a user runs it, offline (extractive answers, the default)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from knowhub.testing.llm_server import ANSWER, LlmServer, closed_url, serve
from tests.helpers import knowhub, write


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    write(
        tmp_path / "docs/ops.md",
        "# Operations\n\n## Backups\n\nDatabase backups run every "
        "6 hours.\nThey are kept for 35 days.\n\n## Access\n\nUse the VPN for the console.\n",
    )
    write(tmp_path / "docs/hr.md", "# HR\n\n## Leave\n\nEmployees get 28 days of annual leave.\n")
    write(tmp_path / "docs/zh.md", "# 手册\n\n## 报销\n\n出差住宿每晚最多报销六百元。\n")
    assert knowhub("ingest", "docs", cwd=tmp_path).returncode == 0
    return tmp_path


def test_an_answer_cites_its_sources(kb: Path) -> None:
    result = knowhub("ask", "How often do database backups run?", "--json", cwd=kb)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["hit_type"] == "rag" and answer["model"] == "extractive"
    assert "every 6 hours. [1]" in answer["answer"]
    assert answer["sources"][0]["source"] == "ops.md"
    assert answer["sources"][0]["section_path"] == "Operations > Backups"
    assert answer["citations"]["supported"] >= 1 and answer["citations"]["invalid"] == []
    assert 0.5 < answer["confidence"] <= 1.0
    assert answer["route"]["intent"] == "search" and answer["route"]["by"] == "rules"
    text = knowhub("ask", "How often do database backups run?", cwd=kb).stdout
    assert "[1] ops.md, § Operations > Backups, lines" in text
    assert "(rag, confidence" in text


def test_chinese_questions_are_answered_in_chinese(kb: Path) -> None:
    answer = json.loads(knowhub("ask", "出差住宿每晚可以报销多少钱", "--json", cwd=kb).stdout)
    assert answer["hit_type"] == "rag" and "六百元" in answer["answer"]


def test_a_question_the_documents_cannot_answer_says_so(kb: Path) -> None:
    result = knowhub("ask", "What is the capital of France?", "--json", cwd=kb)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["hit_type"] == "insufficient_context"
    assert answer["answer"] == "The documents do not cover this question."
    assert answer["confidence"] < 0.3
    text = knowhub("ask", "What is the capital of France?", cwd=kb).stdout
    assert "(insufficient_context" in text and "Sources:" not in text


def test_search_shows_an_absolute_relevance_that_min_score_cuts(kb: Path) -> None:
    """A word found nowhere still gets a top hit at fused score 1.000; its relevance says
    it is not about the query, and --min-score (a relevance) drops it."""
    result = knowhub("search", "ORCA", "--json", cwd=kb)
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits and hits[0]["score"] == 1.0 and hits[0]["relevance"] < 0.2
    dropped = knowhub("search", "ORCA", "--min-score", "0.5", cwd=kb)
    assert dropped.returncode == 0 and dropped.stdout.startswith("no results"), dropped.stdout
    kept = knowhub("search", "How often do database backups run?", "--min-score", "0.5", cwd=kb)
    assert re.findall(
        r"^\[\d\] 1\.000 · relevance (\d\.\d\d)  ops\.md", kept.stdout, flags=re.MULTILINE
    ) == ["0.75"], kept.stdout  # 3 of its 4 terms; alone


def test_greetings_are_answered_without_searching(kb: Path) -> None:
    answer = json.loads(knowhub("ask", "hello!", "--json", cwd=kb).stdout)
    assert answer["hit_type"] == "chat" and answer["sources"] == []
    assert answer["route"]["by"] == "rules"


def test_streamed_events_arrive_in_order(kb: Path) -> None:
    result = knowhub("ask", "How long are backups kept?", "--stream", "--json", cwd=kb)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "stage" and events[0]["stage"] == "routing"
    assert kinds.index("sources") < kinds.index("token") < kinds.index("end") == len(kinds) - 1
    tokens = "".join(e["text"] for e in events if e["event"] == "token")
    assert tokens == events[-1]["answer"] and "35 days" in tokens
    plain = knowhub("ask", "How long are backups kept?", "--stream", cwd=kb).stdout
    assert plain.startswith(events[-1]["answer"]) and "Sources:" in plain


def test_bad_questions_are_clear_errors(kb: Path) -> None:
    for question, message in (("   ", "query is empty"), ("x" * 5000, "over the 4096-byte")):
        result = knowhub("ask", question, cwd=kb)
        assert result.returncode == 1 and message in result.stderr, result.stderr
    missing = knowhub("ask", "backups?", "--collection", "nope", cwd=kb)
    assert missing.returncode == 1 and "unknown collection 'nope'" in missing.stderr


def _llm_env(server: LlmServer, provider: str = "openai", **extra: str) -> dict[str, str]:
    base = server.openai_base if provider == "openai" else server.url
    return {
        "KNOWHUB_LLM__PROVIDER": provider,
        "KNOWHUB_LLM__BASE_URL": base,
        "KNOWHUB_LLM__MODEL": "test-model",
        "KNOWHUB_LLM__BACKOFF_S": "0",
        **extra,
    }


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_a_configured_llm_answers_from_numbered_sources(kb: Path, provider: str) -> None:
    with serve() as server:
        result = knowhub(
            "ask",
            "How often do database backups run?",
            "--json",
            cwd=kb,
            env=_llm_env(server, provider),
        )
        request = server.last
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["answer"] == ANSWER and answer["model"] == f"{provider}:test-model"
    assert answer["hit_type"] == "rag" and answer["citations"]["supported"] == 1
    assert {"prompt_build", "llm_first_token", "llm_total"} <= set(answer["timings_ms"])
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "[1] ops.md — section: Operations > Backups" in messages[0]["content"]
    assert messages[-1]["content"] == "How often do database backups run?"


def test_a_streamed_llm_answer_arrives_token_by_token(kb: Path) -> None:
    with serve(token_delay_s=0.05) as server:
        result = knowhub(
            "ask",
            "How often do database backups run?",
            "--stream",
            "--json",
            cwd=kb,
            env=_llm_env(server),
        )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    tokens = [e["text"] for e in events if e["event"] == "token"]
    assert len(tokens) > 5 and "".join(tokens).strip() == ANSWER
    end = events[-1]
    assert end["timings_ms"]["llm_first_token"] < end["timings_ms"]["llm_total"] - 100


def test_an_llm_that_fails_is_a_clear_error(kb: Path) -> None:
    with serve(fail="502", times=None) as server:
        result = knowhub("ask", "backups?", cwd=kb, env=_llm_env(server))
    assert result.returncode == 1 and "502" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    env = {**_llm_env(server), "KNOWHUB_LLM__BASE_URL": closed_url()}
    refused = knowhub("ask", "backups?", cwd=kb, env=env)
    assert refused.returncode == 1 and "cannot reach" in refused.stderr, refused.stderr


def test_faq_entries_answer_repeated_questions_directly(kb: Path) -> None:
    write(
        kb / "faq.csv",
        "question,answer\nHow long are backups kept?,Thirty-five days.\n"
        "How do I reset my password?,Use the self-service portal.\n",
    )
    imported = knowhub("faq", "import", "faq.csv", cwd=kb)
    assert imported.returncode == 0 and "2 FAQ entries from" in imported.stdout
    assert "faq.csv:2  How long are backups kept?" in knowhub("faq", "list", cwd=kb).stdout
    answer = json.loads(knowhub("ask", "how long are BACKUPS kept", "--json", cwd=kb).stdout)
    assert answer["hit_type"] == "faq_direct" and answer["answer"] == "Thirty-five days."
    assert answer["faq"]["by"] == "exact" and answer["faq"]["line"] == 2
    assert "FAQ match (exact, 1.00)" in answer["notes"][0]
    reworded = json.loads(knowhub("ask", "Backups: how long kept?", "--json", cwd=kb).stdout)
    assert reworded["hit_type"] == "faq_direct" and reworded["faq"]["by"] == "words"
    other = json.loads(
        knowhub("ask", "How often do database backups run?", "--json", cwd=kb).stdout
    )
    assert other["hit_type"] == "rag"  # a different question goes to the documents
    write(kb / "faq.csv", "question,answer\nHow do I reset my password?,Ask IT.\n")
    assert "1 FAQ entries" in knowhub("faq", "import", "faq.csv", cwd=kb).stdout  # replaced
    again = json.loads(knowhub("ask", "How long are backups kept?", "--json", cwd=kb).stdout)
    assert again["hit_type"] != "faq_direct"
    removed = knowhub("faq", "remove", "faq.csv", cwd=kb)
    assert removed.returncode == 0 and "removed 1 FAQ entries" in removed.stdout
    missing = knowhub("faq", "remove", "faq.csv", cwd=kb)
    assert missing.returncode == 1 and "no FAQ entries from" in missing.stderr
    bad = knowhub("faq", "import", write(kb / "bad.csv", "title,body\nx,y\n").name, cwd=kb)
    assert bad.returncode == 1 and "bad.csv:1: the header needs" in bad.stderr
