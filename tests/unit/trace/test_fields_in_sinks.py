"""The trace contract's field list against each sink: a field of
:data:`knowhub.trace.fields.FIELDS` missing from the JSONL line, the OTLP root span's
attributes or the LangSmith run's metadata fails its sink's test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from knowhub.testing.langsmith_server import serve
from knowhub.trace.fields import FIELDS, SEARCH_FIELDS, contract_values
from knowhub.trace.jsonl import FILE, JsonlSink, read_traces
from knowhub.trace.langsmith import LangSmithSink
from knowhub.trace.otlp import OtlpSink
from knowhub.trace.record import Trace, new_trace
from tests.otlp_receiver import otlp_receiver

SCOPE = {"tenants": ["acme"], "datasets": "*", "max_visibility": "internal", "roles": ["sales"]}


def full_trace() -> Trace:
    """An answer trace with every field of the contract set (one the run may not reach:
    served from the result cache, yet failing), so no sink can leave one out unnoticed."""
    trace, _ = new_trace("answer", "http", "handbook")
    trace.query, trace.session_id, trace.scope = "How much is the Team plan?", "s-42", SCOPE
    trace.source_filter = {"language": "en"}
    trace.effective_source = {"filters": {"language": "en", "format": "md"}, "scope": SCOPE}
    trace.kb_version = {"collection": "handbook", "version": 2, "physical": "handbook@v2"}
    trace.kb_version["revision"] = 7
    trace.intent, trace.intent_reason, trace.hit_type = "filter", "llm", "rag"
    trace.prompt_profile = trace.question_category = "pricing"
    trace.sources_count, trace.top_source_score = 3, 0.0331
    trace.answer_confidence, trace.evidence_confidence = 0.4, 0.8
    trace.generation_verification_status, trace.verification_score = "partially_supported", 0.5
    trace.reasons = ["unsupported_sentence"]
    trace.cache = {"result": "hit", "query_embedding": "hit", "faq": "miss"}
    trace.first_token_ms, trace.duration_ms = 12.5, 40.25
    trace.stages_ms = {"routing": 0.5, "faq": 1.0, "cache": 2.0, "llm_total": 30.0}
    trace.error = "the model stopped mid-answer"
    return trace


def test_the_full_trace_sets_every_field_of_the_list() -> None:
    unset = [name for name, value in contract_values(full_trace()).items() if value is None]
    assert unset == []
    assert full_trace().cache_stage == "result" and full_trace().slowest_stage == "llm_total"


def test_the_jsonl_line_has_every_field_and_reads_back_whole(tmp_path: Path) -> None:
    JsonlSink(tmp_path, max_bytes=10**6, keep=2).emit(full_trace())
    line = json.loads((tmp_path / FILE).read_text(encoding="utf-8"))
    assert [name for name in FIELDS if line.get(name) is None] == []
    assert line["stage_timings_ms"]["llm_total"] == 30.0 and line["elapsed_ms"] == 40.25
    (back,) = read_traces(tmp_path)
    assert contract_values(back) == contract_values(full_trace())


def otlp_root(trace: Trace) -> dict[str, Any]:
    with otlp_receiver() as (endpoint, received):
        sink = OtlpSink(endpoint)
        sink.emit(trace)
        sink.flush()
    spans = [
        s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    root = next(s for s in spans if s.name == f"knowhub.{trace.kind}")
    return {a.key: a.value for a in root.attributes}


def carried(attributes: dict[str, Any], name: str) -> bool:
    """The field is an attribute of its own or, a dict, one per key beneath its name."""
    key = f"knowhub.{name}"
    return key in attributes or any(k.startswith(key + ".") for k in attributes)


def test_the_otlp_root_span_has_every_field_as_attributes() -> None:
    values = otlp_root(full_trace())
    assert [name for name in FIELDS if not carried(values, name)] == []
    assert values["knowhub.session_id"].string_value == "s-42"
    assert values["knowhub.intent_reason"].string_value == "llm"
    assert json.loads(values["knowhub.source_filter"].string_value) == {"language": "en"}
    effective = json.loads(values["knowhub.effective_source"].string_value)
    assert effective == full_trace().effective_source
    assert values["knowhub.cache.result"].string_value == "hit"
    assert values["knowhub.cache_stage"].string_value == "result"
    assert values["knowhub.stage_timings_ms.llm_total"].double_value == 30.0
    assert values["knowhub.slowest_stage"].string_value == "llm_total"
    assert values["knowhub.first_token_ms"].double_value == 12.5
    assert values["knowhub.elapsed_ms"].double_value == 40.25
    assert values["knowhub.error"].string_value == "the model stopped mid-answer"


def langsmith_runs(trace: Trace) -> list[dict[str, Any]]:
    """The runs a LangSmith-compatible server received from the sink, over HTTP."""
    with serve(api_key="ls-key") as server:
        LangSmithSink("ls-key", "knowhub", server.url).emit(trace)
    return server.runs


def test_the_langsmith_run_has_every_field_in_metadata_and_tags_to_filter_by() -> None:
    [run] = langsmith_runs(full_trace())
    metadata = run["extra"]["metadata"]
    assert [name for name in FIELDS if metadata.get(name) is None] == []
    expected = json.loads(json.dumps(contract_values(full_trace())))
    assert {name: metadata[name] for name in FIELDS} == expected
    assert {"hit_type:rag", "category:pricing"} <= set(run["tags"])
    assert run["session_name"] == "knowhub" and run["error"] == "the model stopped mid-answer"


def search_trace() -> Trace:
    trace = full_trace()
    trace.kind = "search"
    for name in set(FIELDS) - set(SEARCH_FIELDS):
        setattr(trace, name, None)
    trace.cache = {"result": "miss", "query_embedding": "hit"}
    return trace


def test_a_search_trace_carries_the_fields_that_apply_to_it_in_every_sink(
    tmp_path: Path,
) -> None:
    JsonlSink(tmp_path, max_bytes=10**6, keep=2).emit(search_trace())
    line = json.loads((tmp_path / FILE).read_text(encoding="utf-8"))
    values = otlp_root(search_trace())
    [run] = langsmith_runs(search_trace())
    metadata = run["extra"]["metadata"]
    for name in SEARCH_FIELDS:
        assert line.get(name) is not None and carried(values, name) and name in metadata, name
    assert line["cache_stage"] == "query_embedding"
    assert not (set(FIELDS) - set(SEARCH_FIELDS)) & set(metadata)


def test_the_docs_explain_every_field_of_the_list() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "traces.md").read_text(encoding="utf-8")
    assert [name for name in FIELDS if f"| `{name}` |" not in docs] == []
