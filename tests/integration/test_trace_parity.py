"""An answer's trace carries the whole trace contract in all three sinks, never its prompt.

A real App answers with the fake OpenAI-compatible model of knowhub.testing.llm_server and
sends its traces to the JSONL file, a local OTLP receiver and a LangSmith-compatible
recording server (knowhub.testing.langsmith_server), each over real HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from knowhub import build_app
from knowhub.answer.pipeline import collect
from knowhub.config import load_settings
from knowhub.testing import langsmith_server, llm_server
from knowhub.trace.fields import FIELDS
from knowhub.trace.jsonl import FILE
from knowhub.trace.otlp import OtlpSink
from tests.helpers import write
from tests.otlp_receiver import otlp_receiver

SOURCE = "The Team plan costs $12 per user per month, billed annually, for up to 50 seats."
QUESTION = "How much does the Team plan cost?"


@dataclass
class Sent:
    """What each sink and the model received for two identical answers."""

    answers: list[dict[str, Any]]  # the end events
    lines: list[dict[str, Any]]  # the answers' JSONL lines
    jsonl: str
    otlp: list[ExportTraceServiceRequest]
    langsmith: langsmith_server.LangSmithServer
    model: llm_server.LlmServer


@pytest.fixture(scope="module")
def sent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sent]:
    root = tmp_path_factory.mktemp("parity")
    write(root / "docs/pricing.md", f"# Pricing\n\n{SOURCE}\n")
    reply = "The Team plan costs $12 per user per month [1]."
    with (
        llm_server.serve(answer=reply) as model,
        otlp_receiver() as (endpoint, received),
        langsmith_server.serve(api_key="ls-key") as langsmith,
    ):
        app = build_app(_settings(root, model.openai_base, endpoint, langsmith.url))
        try:
            app.collection().ingest([root / "docs"], tags={"team": "sales"})
            answers = [
                collect(app.collection().ask(QUESTION, filters={"team": "sales"}, session_id="s-1"))
                for _ in range(2)
            ]
            next(s for s in app.tracer.sinks if isinstance(s, OtlpSink)).flush()
        finally:
            app.close()
    raw = (root / "data/traces" / FILE).read_text(encoding="utf-8")
    lines = [json.loads(line) for line in raw.splitlines()]
    mine = [next(r for r in lines if r["trace_id"] == a["trace_id"]) for a in answers]
    yield Sent(answers, mine, raw, received, langsmith, model)


def _settings(root: Path, llm: str, otlp: str, langsmith: str) -> Any:
    overrides = {
        "data_dir": root / "data",
        "embedder.provider": "hashing",
        "embedder.workers": 1,
        "llm.provider": "openai",
        "llm.base_url": llm,
        "llm.model": "test-model",
        "llm.backoff_s": 0,
        "trace.otlp_endpoint": otlp,
        "trace.langsmith_api_key_env": "LS_KEY",
        "trace.langsmith_endpoint": langsmith,
    }
    return load_settings(env={"LS_KEY": "ls-key"}, overrides=overrides, cwd=root)


def test_the_jsonl_line_has_every_field_the_answer_reached(sent: Sent) -> None:
    first, second = sent.lines
    assert [name for name in FIELDS if first[name] is None] == ["cache_stage", "error"]
    assert first["session_id"] == "s-1" and first["source_filter"] == {"team": "sales"}
    assert first["effective_source"]["filters"] == {"team": "sales"}
    assert first["effective_source"]["scope"] == first["scope"]
    assert first["intent"] == "search" and first["intent_reason"] == "rules"
    assert first["hit_type"] == "rag" and first["question_category"] == "pricing"
    assert first["cache"] == {"result": "miss", "query_embedding": "miss", "faq": "miss"}
    assert 0 < first["first_token_ms"] <= first["elapsed_ms"]
    assert first["slowest_stage"] in first["stage_timings_ms"]
    assert second["cache"]["result"] == "hit" and second["cache_stage"] == "result"


def _root_span(sent: Sent, trace_id: str) -> dict[str, Any]:
    spans = [
        s for r in sent.otlp for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    for span in spans:
        values = {a.key: a.value for a in span.attributes}
        if "knowhub.trace_id" in values and values["knowhub.trace_id"].string_value == trace_id:
            return values
    raise AssertionError(f"no span for trace {trace_id}")


def _carried(attributes: dict[str, Any], name: str) -> bool:
    key = f"knowhub.{name}"
    return key in attributes or any(k.startswith(key + ".") for k in attributes)


def test_the_otlp_span_carries_every_field_the_jsonl_line_has(sent: Sent) -> None:
    for line in sent.lines:
        values = _root_span(sent, line["trace_id"])
        present = [n for n in FIELDS if line[n] is not None]
        assert [n for n in present if not _carried(values, n)] == []
        assert values["knowhub.session_id"].string_value == "s-1"


def test_the_langsmith_run_carries_every_field_and_filterable_tags(sent: Sent) -> None:
    runs = {r["extra"]["metadata"]["trace_id"]: r for r in sent.langsmith.runs}
    for line in sent.lines:
        run = runs[line["trace_id"]]
        expected = {n: line[n] for n in FIELDS if line[n] is not None}
        assert {n: run["extra"]["metadata"].get(n) for n in expected} == expected
        assert {"hit_type:rag", "category:pricing"} <= set(run["tags"])


def test_no_sink_gets_the_prompt_or_the_context(sent: Sent) -> None:
    [request, *_] = [r for r in sent.model.requests if r.body.get("stream")]
    system, user = (m["content"] for m in request.body["messages"])
    assert SOURCE in system and user == QUESTION  # the context went to the model …
    otlp = b"".join(r.SerializeToString() for r in sent.otlp).decode("utf-8", "replace")
    langsmith = b"".join(r.raw for r in sent.langsmith.requests).decode()
    for payload in (sent.jsonl, otlp, langsmith):  # … and to no sink (the question does)
        assert SOURCE not in payload and system not in payload and QUESTION in payload
