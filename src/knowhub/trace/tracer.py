"""The Tracer hands finished traces to every configured sink, secrets scrubbed."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from knowhub.config import Settings
from knowhub.surrogates import escape_surrogates
from knowhub.trace.jsonl import JsonlSink
from knowhub.trace.record import Trace

__all__ = ["Sink", "Tracer", "build_tracer"]

log = logging.getLogger("knowhub.trace")


class Sink(Protocol):
    def emit(self, trace: Trace) -> None: ...


class Tracer:
    def __init__(self, sinks: Sequence[Sink], secrets: Iterable[str] = ()) -> None:
        self.sinks = list(sinks)
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def emit(self, trace: Trace) -> None:
        """Send ``trace`` everywhere; a sink that fails is logged and the rest go on."""
        clean = Trace.from_dict(self._scrub(trace.to_dict())).encodable()
        for sink in self.sinks:
            try:
                sink.emit(clean)
            except Exception as exc:  # tracing must never break the run it describes
                reason = escape_surrogates(self._scrub(str(exc)))
                log.warning(
                    "trace sink %s failed for trace %s: %s",
                    type(sink).__name__,
                    clean.trace_id,
                    reason,
                )

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            for secret in self._secrets:
                value = value.replace(secret, "***")
            return value
        if isinstance(value, dict):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._scrub(v) for v in value]
        return value


def build_tracer(settings: Settings) -> Tracer:
    """The sinks ``settings.trace`` asks for (JSONL unless disabled; OTLP, LangSmith if set)."""
    opts = settings.trace
    sinks: list[Sink] = []
    if opts.enabled:
        sinks.append(
            JsonlSink(
                Path(settings.data_dir) / "traces",
                int(opts.max_file_mb * 1024 * 1024),
                opts.keep_files,
            )
        )
    if opts.otlp_endpoint:
        from knowhub.trace.otlp import OtlpSink

        sinks.append(
            OtlpSink(
                opts.otlp_endpoint,
                settings.secret(opts.otlp_headers_env) if opts.otlp_headers_env else None,
            )
        )
    if opts.langsmith_api_key_env:
        key = settings.secret(opts.langsmith_api_key_env)
        if key:
            from knowhub.trace.langsmith import LangSmithSink

            sinks.append(LangSmithSink(key, opts.langsmith_project, opts.langsmith_endpoint))
    return Tracer(sinks, settings.secret_values())
