"""Every sink records the caller's data scope (never its token): JSONL as ``scope``, OTLP as
one span attribute per dimension, LangSmith in the run's metadata (sent over HTTP to a
LangSmith-compatible server)."""

from __future__ import annotations

from pathlib import Path

from knowhub.scope import Scope
from knowhub.testing.langsmith_server import serve
from knowhub.trace.jsonl import JsonlSink, read_traces
from knowhub.trace.langsmith import LangSmithSink
from knowhub.trace.otlp import OtlpSink
from knowhub.trace.record import Trace, new_trace
from tests.otlp_receiver import otlp_receiver

SCOPE = Scope.of(["acme"], max_visibility="internal", roles=["sales"])


def scoped_trace() -> Trace:
    trace, _ = new_trace("search", "http", "default")
    trace.query, trace.scope = "leave policy", SCOPE.to_dict()
    return trace


def test_jsonl_keeps_the_scope(tmp_path: Path) -> None:
    JsonlSink(tmp_path, max_bytes=10**6, keep=2).emit(scoped_trace())
    (back,) = read_traces(tmp_path)
    assert back.scope == SCOPE.to_dict()


def test_otlp_span_attributes_carry_each_dimension_of_the_scope() -> None:
    with otlp_receiver() as (endpoint, received):
        sink = OtlpSink(endpoint)
        sink.emit(scoped_trace())
        sink.flush()
    spans = [
        s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    root = next(s for s in spans if s.name == "knowhub.search")
    values = {a.key: a.value for a in root.attributes}
    listed = {
        key: [v.string_value for v in values[f"knowhub.scope.{key}"].array_value.values]
        for key in ("tenants", "datasets", "roles")
    }
    assert listed == {"tenants": ["acme"], "datasets": ["*"], "roles": ["sales"]}
    assert values["knowhub.scope.max_visibility"].string_value == "internal"


def test_langsmith_run_metadata_carries_the_scope() -> None:
    with serve(api_key="ls-key") as server:
        LangSmithSink("ls-key", "knowhub", server.url).emit(scoped_trace())
    [run] = server.runs
    assert run["extra"]["metadata"]["scope"] == SCOPE.to_dict()
