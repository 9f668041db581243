"""No string loses a run: lone surrogates (undecodable file-name bytes, a "\\ud800" in a
JSON query) and values JSON has no type for reach every sink in a form it can write."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from knowhub.trace.jsonl import FILE, JsonlSink, read_traces
from knowhub.trace.otlp import OtlpSink
from knowhub.trace.record import Trace, new_trace
from knowhub.trace.tracer import Tracer
from tests.otlp_receiver import otlp_receiver

NAME = "caf\udce9.txt"  # how Python presents the file name b"caf\xe9.txt"


def _ingest_trace() -> Trace:
    trace, _ = new_trace("ingest", "cli", "default")
    trace.query = "\ud800 lone"
    trace.ingest = {"added": 0, "failed": [{"source": NAME, "reason": f"{NAME}: is empty"}]}
    trace.error = "1 file(s) failed"
    return trace


class Strict:
    """A sink that, like protobuf or an HTTP JSON client, refuses what UTF-8 cannot encode."""

    def __init__(self) -> None:
        self.traces: list[Trace] = []

    def emit(self, trace: Trace) -> None:
        json.dumps(trace.to_dict(), ensure_ascii=False).encode("utf-8")
        self.traces.append(trace)


class Boom:
    def emit(self, trace: Trace) -> None:
        raise RuntimeError(f"collector refused {NAME}")


def test_jsonl_sink_writes_and_reads_back_a_trace_with_lone_surrogates(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path, max_bytes=10**6, keep=2)
    trace = _ingest_trace()
    sink.emit(trace)
    raw = (tmp_path / FILE).read_bytes().decode("utf-8")  # valid UTF-8 on disk
    assert "caf\\\\xe9.txt" in raw  # the JSON spelling of the text caf\xe9.txt
    (back,) = read_traces(tmp_path)
    assert back.trace_id == trace.trace_id and back.query == "\\ud800 lone"
    assert back.ingest is not None
    assert back.ingest["failed"] == [{"source": "caf\\xe9.txt", "reason": "caf\\xe9.txt: is empty"}]


def test_jsonl_sink_keeps_values_json_has_no_type_for(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path, max_bytes=10**6, keep=2)
    trace = _ingest_trace()
    trace.ingest = {"added": 1, "odd": {1, 2}}
    sink.emit(trace)
    (back,) = read_traces(tmp_path)
    assert back.ingest == {"added": 1, "odd": "{1, 2}"}


def test_jsonl_sink_records_the_run_even_when_its_details_cannot_be_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sink = JsonlSink(tmp_path, max_bytes=10**6, keep=2)
    trace = _ingest_trace()
    loop: list[Any] = []
    loop.append(loop)
    trace.notes = loop
    with caplog.at_level(logging.WARNING, "knowhub.trace"):
        sink.emit(trace)
    (back,) = read_traces(tmp_path)
    assert back.trace_id == trace.trace_id and back.kind == "ingest"
    assert back.error is not None and back.error.startswith("trace details lost")
    assert f"trace {trace.trace_id}: written without its details" in caplog.text


def test_tracer_gives_every_sink_an_encodable_trace_and_a_failing_one_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    strict = Strict()
    tracer = Tracer([Boom(), JsonlSink(tmp_path, max_bytes=10**6, keep=2), strict])
    trace = _ingest_trace()
    with caplog.at_level(logging.WARNING, "knowhub.trace"):
        tracer.emit(trace)
    assert [t.trace_id for t in strict.traces] == [trace.trace_id]
    assert [t.trace_id for t in read_traces(tmp_path)] == [trace.trace_id]
    assert f"trace sink Boom failed for trace {trace.trace_id}" in caplog.text
    assert "collector refused caf\\xe9.txt" in caplog.text


def test_otlp_sink_exports_a_trace_with_lone_surrogates() -> None:
    with otlp_receiver() as (endpoint, received):
        sink = OtlpSink(endpoint)
        trace = _ingest_trace()
        sink.emit(trace)
        sink.flush()  # force_flush waits for the export to be answered
    spans = [
        s for r in received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    root = next(s for s in spans if s.name == "knowhub.ingest")
    attributes = {a.key: a.value.string_value for a in root.attributes}
    assert attributes["knowhub.query"] == "\\ud800 lone"
