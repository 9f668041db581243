"""Filling a trace from what a search, an answer or an ingest run returned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from knowhub.models import Hit
from knowhub.trace.record import Trace, preview

__all__ = ["ANSWER_CHECKS", "record_answer", "record_ingest", "record_search"]

# The order stages run in, for the waterfall; anything else follows.
_ANSWER_STAGES = (
    "routing",
    "faq",
    "lexical",
    "query_embedding",
    "dense",
    "cross_lingual",
    "fusion",
    "rerank",
    "extractive",
    "prompt_build",
    "llm_first_token",
    "llm_total",
)


def record_search(
    trace: Trace,
    timings_ms: Mapping[str, float],
    counts: Mapping[str, int],
    cache: Mapping[str, str],
    hits: Sequence[Hit],
) -> None:
    trace.stages_ms = {k: round(v, 3) for k, v in timings_ms.items()}
    trace.stage_hits = {stage: n for stage, n in counts.items() if stage in timings_ms}
    trace.stage_hits["fusion"] = counts.get("hits", len(hits))
    trace.cache = dict(cache)
    trace.sources_count = len(hits)
    trace.top_source_score = round(hits[0].score, 4) if hits else None
    trace.source_ids = [h.chunk_id for h in hits]


def record_answer(trace: Trace, end: Mapping[str, Any]) -> None:
    """From an answer's ``end`` event: timings (search stages unprefixed), outcome, sources."""
    raw = {
        k.removeprefix("search."): float(v)
        for k, v in end.get("timings_ms", {}).items()
        if k != "retrieval"
    }
    ordered = [s for s in _ANSWER_STAGES if s in raw] + [s for s in raw if s not in _ANSWER_STAGES]
    trace.stages_ms = {s: round(raw[s], 3) for s in ordered}
    sources = end.get("sources", [])
    trace.stage_hits = {"fusion": len(sources)} if "fusion" in raw else {}
    trace.intent = end.get("intent")
    trace.intent_reason = _intent_reason(end.get("route"))
    trace.hit_type = end.get("hit_type")
    if trace.intent != "chat":  # every other answer looked in the FAQ first
        trace.cache["faq"] = "hit" if trace.hit_type == "faq_direct" else "miss"
    trace.confidence = end.get("confidence")
    _record_checks(trace, end)
    trace.sources_count = len(sources)
    trace.top_source_score = end.get("top_source_score")
    trace.source_ids = [s["chunk_id"] for s in sources]
    trace.model = end.get("model")
    trace.answer = preview(end.get("answer"))
    trace.notes = list(end.get("notes", []))


def _intent_reason(route: Mapping[str, Any] | None) -> str | None:
    """How the router decided: ``rules``, ``llm``, or ``fallback: <why>``."""
    if not route:
        return None
    return f"{route['by']}: {route['note']}" if route.get("note") else str(route["by"])


# The answer's check fields, copied as the end event has them (docs/traces.md).
ANSWER_CHECKS = (
    "question_category",
    "prompt_profile",
    "generation_verification_status",
    "answer_confidence",
    "evidence_confidence",
)


def _record_checks(trace: Trace, end: Mapping[str, Any]) -> None:
    for name in ANSWER_CHECKS:
        setattr(trace, name, end.get(name))
    verification = end.get("verification") or {}
    trace.verification_score = verification.get("score")
    trace.reasons = list(end.get("reasons", []))


_SKIPPED_NAMED = 20  # in a trace, however many types there are


def record_ingest(trace: Trace, report: Any) -> None:
    """From an :class:`~knowhub.ingest.pipeline.IngestReport` (file names and reasons only)."""
    trace.stages_ms = {"ingest": round(report.seconds * 1000.0, 3)}
    trace.stage_hits = {"ingest": len(report.added) + len(report.updated)}
    named = report.skipped_sample()[0][:_SKIPPED_NAMED]
    trace.ingest = {
        "added": len(report.added),
        "updated": len(report.updated),
        "moved": [{"from": old, "to": new} for old, new in report.moved],
        "retagged": len(report.retagged),
        "unchanged": len(report.unchanged),
        "removed": len(report.removed),
        "failed": [{"source": s, "reason": preview(r)} for s, r in report.failed],
        # A few named, all counted: a served folder's every sync wrote each unread file.
        "skipped": [{"source": s, "reason": preview(r)} for s, r in named],
        "skipped_count": len(report.skipped),
        "skipped_by_type": report.skipped_by_type(),
        "chunks": report.chunks,
        "embedded": report.embedded,
        "cached": report.cached,
    }
    if report.failed:
        trace.error = f"{len(report.failed)} file(s) failed"
