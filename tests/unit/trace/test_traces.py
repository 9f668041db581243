"""Trace records, the JSONL sink and its rotation, scrubbing, summaries and the waterfall."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from knowhub.errors import QueryError
from knowhub.trace.jsonl import JsonlSink, read_traces
from knowhub.trace.record import PREVIEW_CHARS, Trace, new_trace, preview
from knowhub.trace.report import parse_since, select, summarize, waterfall
from knowhub.trace.tracer import Tracer


def _trace(kind: str = "search", ms: float = 10.0, **values: object) -> Trace:
    trace, _ = new_trace(kind, "cli", "default")
    trace.duration_ms = ms
    trace.stages_ms = {"lexical": ms * 0.3, "dense": ms * 0.6}
    trace.stage_hits = {"lexical": 4, "dense": 5}
    for key, value in values.items():
        setattr(trace, key, value)
    return trace


def test_records_round_trip_and_previews_are_short() -> None:
    trace = _trace(query="how often are backups taken", hit_type="rag")
    assert Trace.from_dict(json.loads(json.dumps(trace.to_dict()))) == trace
    assert len(trace.trace_id) == 16 and trace.started_at.endswith("Z")
    long = preview("word " * 200)
    assert long is not None and len(long) == PREVIEW_CHARS and long.endswith("…")
    assert preview(" a\n b ") == "a b" and preview(None) is None
    assert trace.slowest_stage == "dense"


def test_the_jsonl_sink_appends_rotates_and_reads_back_in_order(tmp_path: Path) -> None:
    written = [_trace(ms=float(i)) for i in range(30)]
    # Files of about two traces each, however many fields a trace grows: three files (the
    # current and two rotated) hold 5-6 of the 30.
    size = len(json.dumps(written[0].to_dict())) + 1
    sink = JsonlSink(tmp_path / "traces", max_bytes=2 * size + size // 2, keep=2)
    for trace in written:
        sink.emit(trace)
    files = sorted(p.name for p in (tmp_path / "traces").iterdir())
    assert files == ["traces.1.jsonl", "traces.2.jsonl", "traces.jsonl"]
    back = list(read_traces(tmp_path / "traces"))
    assert back == written[-len(back) :] and 4 < len(back) < 30  # oldest rotated away
    with (tmp_path / "traces" / "traces.jsonl").open("a") as out:
        out.write("{damaged\n")
    assert len(list(read_traces(tmp_path / "traces"))) == len(back)


class Boom:
    def emit(self, trace: Trace) -> None:
        raise RuntimeError("collector down, key sk-secret-123 rejected")


class Keep:
    def __init__(self) -> None:
        self.traces: list[Trace] = []

    def emit(self, trace: Trace) -> None:
        self.traces.append(trace)


def test_the_tracer_scrubs_secrets_and_survives_a_failing_sink(
    caplog: pytest.LogCaptureFixture,
) -> None:
    keep = Keep()
    tracer = Tracer([Boom(), keep], secrets=["sk-secret-123", "ab"])
    trace = _trace(error="llm failed: bad key sk-secret-123", notes=["sent sk-secret-123"])
    tracer.emit(trace)
    assert keep.traces[0].error == "llm failed: bad key ***"
    assert keep.traces[0].notes == ["sent ***"]
    assert "collector down" in caplog.text and "sk-secret-123" not in caplog.text


def test_select_summarize_and_waterfall() -> None:
    old = _trace(ms=5.0)
    old.started_at = (datetime.now(UTC) - timedelta(days=2)).isoformat().replace("+00:00", "Z")
    traces = [
        old,
        _trace(ms=50.0),
        _trace("answer", ms=500.0, error="timed out"),
        _trace("ingest", ms=20.0),
    ]
    assert select(traces, kind="answer") == [traces[2]]
    assert select(traces, slow_ms=40) == traces[1:3]
    assert select(traces, errors=True) == [traces[2]]
    assert select(traces, since=parse_since("1d")) == traces[1:]
    summary = summarize(traces)
    assert summary["count"] == 4 and summary["errors"] == 1
    assert summary["by_kind"] == {"answer": 1, "ingest": 1, "search": 2}
    assert summary["stages_ms"]["dense"]["count"] == 4
    assert summary["stages_ms"]["dense"]["p95"] == 300.0 and summary["slowest_stage"] == "dense"
    assert summarize([])["slowest_stage"] is None
    drawn = waterfall(traces[2])
    assert "ERROR timed out" in drawn and "dense" in drawn and "█" in drawn
    lines = [line for line in drawn.splitlines() if "█" in line]
    assert lines[0].index("█") < lines[1].index("█")  # dense starts after lexical ends


def test_since_accepts_durations_and_dates() -> None:
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    assert parse_since("2h", now) == datetime(2026, 11, 30, 10, tzinfo=UTC)
    assert parse_since("2026-11-29", now) == datetime(2026, 11, 29, tzinfo=UTC)
    with pytest.raises(QueryError, match="neither a duration"):
        parse_since("yesterday", now)


def test_kb_version_names_the_version_read_and_old_traces_still_load() -> None:
    read = {"collection": "default", "version": 2, "physical": "default@v2", "revision": 7}
    trace = _trace(kb_version=read)
    assert Trace.from_dict(json.loads(json.dumps(trace.to_dict()))).kb_version == read
    assert trace.kb_version_label == "version 2 (default@v2, revision 7)"
    assert "collection default (version 2 (default@v2, revision 7))" in waterfall(trace)
    # Before versions, kb_version was the collection's revision: it was its version 1.
    old = Trace.from_dict({**_trace().to_dict(), "kb_version": 4})
    assert old.kb_version == {
        "collection": "default",
        "version": 1,
        "physical": "default",
        "revision": 4,
    }
    assert old.kb_version_label == "version 1 (revision 4)"
    assert _trace().kb_version_label == "version ?"


def test_an_ingest_trace_counts_the_skipped_files_and_names_a_few() -> None:
    # A served folder's every sync wrote each of /usr/share/doc's 20,000 unread files.
    from knowhub.ingest.report import IngestReport
    from knowhub.trace.build import record_ingest

    report = IngestReport("default")
    report.skipped = [(f"s{i}.py", f"s{i}.py: unsupported file type .py") for i in range(5000)]
    report.skipped += [("a.gif", "a.gif: unsupported file type .gif")]
    trace, _ = new_trace("ingest", "cli", "default")
    record_ingest(trace, report)
    assert trace.ingest is not None
    assert (trace.ingest["skipped_count"], trace.ingest["skipped_by_type"]) == (
        5001,
        {".py": 5000, ".gif": 1},
    )
    named = [s["source"] for s in trace.ingest["skipped"]]
    assert named == ["s0.py", "s1.py", "s2.py", "s3.py", "s4.py", "a.gif"]
