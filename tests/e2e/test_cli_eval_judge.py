"""`knowhub eval --answers` with an LLM: answers written by the scripted model server (real
HTTP), then judged by it as Ragas defines faithfulness, answer relevancy and context
precision; a second run reads every verdict from the cache and asks the judge nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from knowhub.testing.llm_server import serve
from tests.helpers import knowhub, write

QUESTION = "How often do database backups run?"
ANSWER = "Incremental database backups run every 6 hours [1]. They are kept for 90 days [1]."


def model(body: dict[str, Any]) -> str:
    """The answering model, and the judge: which prompt it got says what to reply."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "standalone statements" in system:
        statements = ["Incremental backups run every 6 hours.", "Backups are kept for 90 days."]
        return json.dumps({"statements": statements})
    if "faithfulness of statements" in system:
        return json.dumps({"verdicts": [{"verdict": 1}, {"verdict": 0}]})  # 90 days: made up
    if "Generate a question" in system:
        return json.dumps({"questions": [QUESTION] * 3, "noncommittal": 0})
    if "useful in arriving" in system:
        contexts = len(re.findall(r"^\[\d+\] ", user.split("Contexts:")[1], re.MULTILINE))
        return json.dumps({"verdicts": [0, 1] + [0] * (contexts - 2)})
    return ANSWER


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    write(tmp_path / "docs" / "ops.md", "# Backups\n\nIncremental database backups run every "
          "6 hours. Nightly full backups are kept for 35 days.\n")  # fmt: skip
    write(tmp_path / "docs" / "backup-faq.md", "# Backup questions\n\nDatabase backups run "
          "every 6 hours and are checked each morning by the on-call engineer.\n")  # fmt: skip
    assert knowhub("ingest", "docs", cwd=tmp_path).returncode == 0
    cases = [{"id": "b", "query": QUESTION, "expected_hit_type": "rag", "must_not_say": ["90"]}]
    write(tmp_path / "judged.json", json.dumps(cases))
    return tmp_path


def llm_env(url: str, gates: str = "{}") -> dict[str, str]:
    return {
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__BASE_URL": url,
        "KNOWHUB_LLM__MODEL": "judge-model",
        "KNOWHUB_LLM__BACKOFF_S": "0",
        "KNOWHUB_EVAL__GATES": gates,
    }


def test_llm_judged_metrics_are_reported_gated_and_cached(kb: Path) -> None:
    gates = '{"judged": {"llm_faithfulness": 0.9, "answer_relevancy": 0.99}}'
    with serve(script=model) as server:
        first = knowhub("eval", "--answers", "judged.json", "--json", "--gate", cwd=kb,
                        env=llm_env(server.openai_base, gates))  # fmt: skip
        judged_first = sum(1 for r in server.requests if not r.stream)
        second = knowhub("eval", "--answers", "judged.json", "--json", cwd=kb,
                         env=llm_env(server.openai_base))  # fmt: skip
        judged_second = sum(1 for r in server.requests if not r.stream) - judged_first
    assert first.returncode == 1, first.stderr  # 90 days is not in the sources
    assert "llm_faithfulness 0.500 < 0.900 (-0.400)" in first.stderr
    assert "answer_relevancy" not in first.stderr  # the questions asked back are the question
    report = json.loads(first.stdout)
    metrics = report["metrics"]
    assert metrics["llm_faithfulness"] == 0.5 and metrics["answer_relevancy"] == pytest.approx(1)
    assert metrics["context_precision"] == 0.5  # the one useful context ranked second
    assert metrics["must_not_say_compliance"] == 0.0 and metrics["faithfulness"] == 0.5
    assert report["context"]["llm"] == "openai:judge-model"
    assert report["judge"] == {"model": "openai:judge-model", "calls": 4, "cached": 0}
    assert judged_first == 4 and judged_second == 0
    again = json.loads(second.stdout)
    assert again["judge"] == {"model": "openai:judge-model", "calls": 0, "cached": 4}
    assert {k: again["metrics"][k] for k in metrics} == metrics
    cache = kb / "data" / "eval" / "judge-cache"
    assert len(list(cache.glob("*.json"))) == 4


def test_a_judge_reply_that_is_not_the_json_asked_for_is_a_clear_error(kb: Path) -> None:
    def careless(body: dict[str, Any]) -> str:
        return "Sure! Here are the statements." if body.get("response_format") else ANSWER

    with serve(script=careless) as server:
        result = knowhub(
            "eval", "--answers", "judged.json", cwd=kb, env=llm_env(server.openai_base)
        )
    assert result.returncode == 1
    assert "LLM judge openai:judge-model, prompt 'questions': not JSON" in result.stderr
