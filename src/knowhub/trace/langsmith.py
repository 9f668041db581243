"""LangSmith export (extra ``langsmith``): one run per trace, active only with a key."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from knowhub.errors import ConfigError
from knowhub.trace.fields import contract_values
from knowhub.trace.record import Trace

__all__ = ["LangSmithSink", "run_of"]

_RUN_TYPES = {"search": "retriever", "answer": "chain", "ingest": "chain"}


class LangSmithSink:
    def __init__(self, api_key: str, project: str, endpoint: str) -> None:
        try:
            from langsmith import Client
        except ImportError as exc:
            raise ConfigError(
                "trace.langsmith_api_key_env is set but langsmith is not installed: "
                "pip install 'knowhub[langsmith]'"
            ) from exc
        # Each run is sent whole, one POST /runs as it is emitted: the client's batching
        # thread (and the GET /info it starts with) would carry nothing.
        self._client: Any = Client(api_key=api_key, api_url=endpoint, auto_batch_tracing=False)
        self.project = project

    def emit(self, trace: Trace) -> None:
        self._client.create_run(**run_of(trace, self.project))


def run_of(trace: Trace, project: str) -> dict[str, Any]:
    """The ``create_run`` arguments for ``trace``: every field of the trace contract
    (knowhub.trace.fields) that applies in metadata; its hit type, category and
    verification status also as tags, so runs can be filtered by them."""
    trace = trace.encodable()  # the client's JSON encoding refuses lone surrogates
    start = datetime.fromisoformat(trace.started_at.replace("Z", "+00:00"))
    outputs = {
        "hit_type": trace.hit_type,
        "answer": trace.answer,
        "source_ids": trace.source_ids,
        "ingest": trace.ingest,
    }
    contract = {k: v for k, v in contract_values(trace).items() if v is not None}
    return {
        "name": f"knowhub.{trace.kind}",
        "run_type": _RUN_TYPES.get(trace.kind, "chain"),
        "inputs": {"query": trace.query, "collection": trace.collection},
        "outputs": {k: v for k, v in outputs.items() if v is not None},
        "start_time": start,
        "end_time": start + timedelta(milliseconds=trace.duration_ms),
        "error": trace.error,
        "project_name": project,
        "tags": _tags(trace),
        "extra": {
            "metadata": {"trace_id": trace.trace_id, "interface": trace.interface, **contract}
        },
    }


def _tags(trace: Trace) -> list[str]:
    labels = {
        "hit_type": trace.hit_type,
        "category": trace.question_category,
        "verification": trace.generation_verification_status,
    }
    return [f"{name}:{value}" for name, value in labels.items() if value]
