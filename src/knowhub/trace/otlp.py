"""OpenTelemetry export: one root span per run, one child span per stage (extra ``otel``)."""

from __future__ import annotations

import atexit
import json
from datetime import datetime
from typing import Any

from knowhub.errors import ConfigError
from knowhub.trace.fields import contract_values
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
    """The root span's attributes: the run's identity, then every field of the trace
    contract (knowhub.trace.fields) as ``knowhub.<name>``, in a form a span can hold."""
    values: dict[str, Any] = {
        "knowhub.trace_id": trace.trace_id,
        "knowhub.interface": trace.interface,
        "knowhub.collection": trace.collection,
        "knowhub.query": trace.query,
        "knowhub.model": trace.model,
        "knowhub.confidence": trace.confidence,
    }
    for name, value in contract_values(trace).items():
        values.update(_field_attributes(name, value))
    return {k: v for k, v in values.items() if v is not None}


# Filters are JSON text: one attribute even when empty, any key a caller may filter on.
_AS_JSON = frozenset({"source_filter", "effective_source"})


def _field_attributes(name: str, value: Any) -> dict[str, Any]:
    """``knowhub.<name>``; a dict one attribute per key beneath it (a span attribute is a
    scalar or a list of them), so spans filter by tenant, cache outcome or stage time."""
    key = f"knowhub.{name}"
    if value is None:
        return {}
    if name == "kb_version":  # the names it has always been sent under
        return {
            key: value.get("version"),
            "knowhub.kb_physical": value.get("physical"),
            "knowhub.kb_revision": value.get("revision"),
        }
    if name in _AS_JSON:
        return {key: json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)}
    if isinstance(value, dict):
        return _flat(key, value)
    return {key: _scalars(value)}


def _flat(prefix: str, values: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}.{k}": _scalars(v) for k, v in values.items()}


def _scalars(value: Any) -> Any:
    """A list as a tuple of strings (a span attribute type of its own)."""
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else value
