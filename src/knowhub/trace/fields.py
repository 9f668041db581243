"""The trace contract: the fields every answer trace carries, in every sink, by one name.

:data:`FIELDS` is the list each sink is tested against (tests/unit/trace/test_fields_in_sinks.py):
JSONL writes each as a key of the line, OTLP as span attributes ``knowhub.<name>`` (a dict's
keys flattened beneath it), LangSmith in the run's metadata. :func:`contract_values` reads
them off a :class:`~knowhub.trace.record.Trace`, where three have other names or are derived.
"""

from __future__ import annotations

from typing import Any

from knowhub.trace.record import RENAMED, Trace

__all__ = ["ANSWER_ONLY", "FIELDS", "SEARCH_FIELDS", "contract_values"]

# name → what it means (docs/traces.md lists the same, in this order).
FIELDS: dict[str, str] = {
    "session_id": "the conversation the question belongs to (HTTP session_id), if any",
    "source_filter": "the metadata filters the caller gave",
    "effective_source": "what the search ran with: the filters (the caller's and the "
    "router's) and the caller's data scope",
    "scope": "the caller's data scope (tenants, datasets, max_visibility, roles; '*' for all)",
    "kb_version": "the version read: collection, version, physical store collection, revision",
    "intent": "the router's decision: chat | search | filter | compare",
    "intent_reason": "why: rules | llm, or 'fallback: <why the LLM router was not followed>'",
    "hit_type": "rag | insufficient_context | faq_direct | chat",
    "prompt_profile": "the system prompt profile the LLM got (none without an LLM call)",
    "question_category": "the question's category (pricing, compliance, how-to, …)",
    "sources_count": "how many sources the answer listed",
    "top_source_score": "the best source's score",
    "answer_confidence": "evidence confidence times the verification (or citation) score",
    "evidence_confidence": "the best source's relevance",
    "generation_verification_status": "verified | quoted | partially_supported | unsupported",
    "verification_score": "the share of the answer's sentences its sources support",
    "reasons": "what lowered the confidence (low_top_score, uncited_sentence, …)",
    "cache": "each cache's outcome: result, query_embedding (hit | miss | skipped | off), "
    "faq (hit | miss)",
    "cache_stage": "the cache that answered: faq, result or query_embedding (none: no cache)",
    "first_token_ms": "ms from the question to the answer's first text",
    "stage_timings_ms": "ms per stage, in the order they ran",
    "slowest_stage": "the stage that took longest",
    "elapsed_ms": "ms from the question to the end of the run",
    "error": "why the run failed (none: it did not)",
}

# Fields a search trace has no use for: it routes, categorises and generates nothing.
ANSWER_ONLY = frozenset(
    {
        "session_id",
        "intent",
        "intent_reason",
        "hit_type",
        "prompt_profile",
        "question_category",
        "answer_confidence",
        "evidence_confidence",
        "generation_verification_status",
        "verification_score",
        "reasons",
        "first_token_ms",
    }
)
SEARCH_FIELDS = tuple(name for name in FIELDS if name not in ANSWER_ONLY)


def contract_values(trace: Trace) -> dict[str, Any]:
    """Each of :data:`FIELDS` as ``trace`` has it (None: it does not apply to this run)."""
    return {name: getattr(trace, RENAMED.get(name, name)) for name in FIELDS}
