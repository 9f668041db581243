"""OpenTelemetry export: one root span per run, one child span per stage (extra ``otel``)."""

from __future__ import annotations

import atexit
from datetime import datetime
from typing import Any

from knowhub.errors import ConfigError
from knowhub.trace.record import Trace

__all__ = ["OtlpSink"]


class OtlpSink:
    """Sends traces to an OTLP/HTTP endpoint in a background batch, flushed at exit.

    Stage spans are laid end to end from the run's start in the order the stages ran;
    nested stages (a search inside an answer) are reported as they were measured.
    """

    def __init__(self, endpoint: str, headers: str | None = None) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise ConfigError(
                "trace.otlp_endpoint is set but OpenTelemetry is not installed: "
                "pip install 'knowhub[otel]'"
            ) from exc
        pairs = dict(p.split("=", 1) for p in (headers or "").split(",") if "=" in p)
        self._provider = TracerProvider(resource=Resource.create({"service.name": "knowhub"}))
        self._provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint, headers=pairs, timeout=5))
        )
        self._tracer = self._provider.get_tracer("knowhub")
        atexit.register(self._provider.shutdown)

    def emit(self, trace: Trace) -> None:
        from opentelemetry import trace as otel

        trace = trace.encodable()  # protobuf refuses lone surrogates, failing the whole batch
        start = _ns(trace.started_at)
        root = self._tracer.start_span(
            f"knowhub.{trace.kind}", start_time=start, attributes=_attributes(trace)
        )
        if trace.error:
            root.set_status(otel.Status(otel.StatusCode.ERROR, trace.error))
        context = otel.set_span_in_context(root)
        at = start
        for stage, ms in trace.stages_ms.items():
            span = self._tracer.start_span(stage, context=context, start_time=at)
            if stage in trace.stage_hits:
                span.set_attribute("knowhub.hits", trace.stage_hits[stage])
            at += int(ms * 1_000_000)
            span.end(end_time=at)
        root.end(end_time=start + int(trace.duration_ms * 1_000_000))

    def flush(self) -> None:
        self._provider.force_flush()


def _ns(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1_000_000_000)


def _attributes(trace: Trace) -> dict[str, Any]:
    kb = trace.kb_version or {}  # flattened: span attributes are scalars
    values: dict[str, Any] = {
        "knowhub.trace_id": trace.trace_id,
        "knowhub.interface": trace.interface,
        "knowhub.collection": trace.collection,
        "knowhub.kb_version": kb.get("version"),
        "knowhub.kb_physical": kb.get("physical"),
        "knowhub.kb_revision": kb.get("revision"),
        "knowhub.intent": trace.intent,
        "knowhub.hit_type": trace.hit_type,
        "knowhub.confidence": trace.confidence,
        "knowhub.sources_count": trace.sources_count,
        "knowhub.top_source_score": trace.top_source_score,
        "knowhub.query": trace.query,
        "knowhub.model": trace.model,
        "knowhub.question_category": trace.question_category,
        "knowhub.prompt_profile": trace.prompt_profile,
        "knowhub.generation_verification_status": trace.generation_verification_status,
        "knowhub.verification_score": trace.verification_score,
        "knowhub.answer_confidence": trace.answer_confidence,
        "knowhub.evidence_confidence": trace.evidence_confidence,
        # A sequence of strings is a span attribute type of its own; None: not an answer.
        "knowhub.reasons": None if trace.reasons is None else tuple(trace.reasons),
    }
    values.update(_scope_attributes(trace.scope))
    return {k: v for k, v in values.items() if v is not None}


def _scope_attributes(scope: dict[str, Any] | None) -> dict[str, Any]:
    """The caller's data scope, one attribute per dimension (lists of strings are a span
    attribute type of their own; ``"*"``: unrestricted), so spans filter by tenant."""
    return {f"knowhub.scope.{key}": _scalars(value) for key, value in (scope or {}).items()}


def _scalars(value: Any) -> Any:
    return tuple(str(v) for v in value) if isinstance(value, list) else value
