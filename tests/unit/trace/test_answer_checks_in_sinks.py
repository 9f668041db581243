"""Every sink records an answer's checks: its category and prompt profile, the verification
of its sentences, its confidences and the reasons — and never the prompt or the sources."""

from __future__ import annotations

from pathlib import Path

from knowhub.config.answer import DEFAULT_PROFILES
from knowhub.trace.build import record_answer
from knowhub.trace.jsonl import JsonlSink, read_traces
from knowhub.trace.langsmith import run_of
from knowhub.trace.otlp import OtlpSink
from knowhub.trace.record import Trace, new_trace
from tests.answer_helpers import source, verified
from tests.otlp_receiver import otlp_receiver

SOURCE_TEXT = "The Team plan costs $12 per user per month, billed annually."
CHECKS = {
    "question_category": "pricing",
    "prompt_profile": "pricing",
    "generation_verification_status": "partially_supported",
    "verification_score": 0.5,
    "answer_confidence": 0.4,
    "evidence_confidence": 0.8,
    "reasons": ["number_not_in_source", "unsupported_sentence"],
}


def answer_trace() -> Trace:
    text = "The Team plan costs $12 per user per month [1]. Students pay $5 [1]."
    answer = verified(text, source(SOURCE_TEXT))
    answer.question_category, answer.prompt_profile = "pricing", "pricing"
    trace, _ = new_trace("answer", "cli", "default")
    record_answer(trace, answer.to_dict())
    return trace


def test_the_answer_trace_carries_the_checks_and_no_prompt_or_source_text() -> None:
    trace = answer_trace()
    assert {k: getattr(trace, k) for k in CHECKS} == CHECKS
    written = str(trace.to_dict())
    assert SOURCE_TEXT not in written and DEFAULT_PROFILES["pricing"] not in written


def test_jsonl_keeps_the_checks(tmp_path: Path) -> None:
    JsonlSink(tmp_path, max_bytes=10**6, keep=2).emit(answer_trace())
    (back,) = read_traces(tmp_path)
    assert {k: getattr(back, k) for k in CHECKS} == CHECKS


def test_otlp_span_attributes_carry_the_checks() -> None:
    with otlp_receiver() as (endpoint, received):
        sink = OtlpSink(endpoint)
        sink.emit(answer_trace())
        sink.flush()
    spans = [
        s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    root = next(s for s in spans if s.name == "knowhub.answer")
    values = {a.key: a.value for a in root.attributes}
    assert values["knowhub.question_category"].string_value == "pricing"
    assert values["knowhub.prompt_profile"].string_value == "pricing"
    assert values["knowhub.generation_verification_status"].string_value == "partially_supported"
    assert values["knowhub.verification_score"].double_value == 0.5
    assert values["knowhub.answer_confidence"].double_value == 0.4
    assert values["knowhub.evidence_confidence"].double_value == 0.8
    reasons = [v.string_value for v in values["knowhub.reasons"].array_value.values]
    assert reasons == CHECKS["reasons"]


def test_langsmith_metadata_carries_the_checks_and_tags_the_category() -> None:
    run = run_of(answer_trace(), "knowhub")
    metadata = run["extra"]["metadata"]
    assert {k: metadata[k] for k in CHECKS} == CHECKS
    assert run["tags"] == ["hit_type:rag", "category:pricing", "verification:partially_supported"]


def test_a_search_trace_has_no_checks_anywhere() -> None:
    trace, _ = new_trace("search", "cli", "default")
    run = run_of(trace, "knowhub")
    assert run["tags"] == [] and not set(CHECKS) & set(run["extra"]["metadata"])
