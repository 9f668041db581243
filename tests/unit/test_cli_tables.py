"""Terminal tables stay readable: columns never run together, rows stay bounded."""

from __future__ import annotations

from dataclasses import replace

from knowhub.interfaces.cli.traces import _render
from knowhub.interfaces.render import SOURCE_CHARS, middle_cut, render_documents, render_table
from knowhub.models import DocumentRecord
from knowhub.trace.record import Trace
from knowhub.trace.report import summarize


def _trace(ms: float, stage_ms: float) -> Trace:
    return Trace(
        "abcdef0123456789",
        "search",
        "python",
        "default",
        "2026-12-01T10:00:00.000Z",
        duration_ms=ms,
        stages_ms={"a_rather_long_stage_name": stage_ms},
        query="backups",
    )


def test_traces_columns_stay_apart_when_p95_is_large() -> None:
    runs = [_trace(12345678.9, 98765432.25), _trace(1.0, 7.5), _trace(2.0, 8.0)]
    text = _render(summarize(runs), runs)
    header = next(line for line in text.splitlines() if line.startswith("stage"))
    row = next(line for line in text.splitlines() if line.startswith("a_rather_long"))
    assert row.split() == ["a_rather_long_stage_name", "3", "8.0", "98765432.25"]
    # Right-aligned under their headers, at least two spaces between columns.
    assert len(row) == len(header) and "  98765432.25" in row
    recent = [line for line in text.splitlines() if "abcdef0123456789" in line]
    assert recent[0].split()[4:7] == ["12345678.9", "ms", "default"]


def _record(source: str) -> DocumentRecord:
    return DocumentRecord(
        collection="default",
        source=source,
        path="/x/" + source,
        doc_hash="ab" * 32,
        size=1,
        mtime_ns=0,
        title="t",
        format="md",
        chunk_count=1,
        char_count=1,
        pages=None,
        ingested_at="2026-12-01T10:00:00Z",
        metadata={},
    )


def test_docs_table_cuts_long_sources_in_the_middle() -> None:
    deep = "/".join(["very-deep-folder"] * 30) + "/the-file.md"
    text = render_documents([_record("short.md"), _record(deep)])
    lines = text.splitlines()
    assert max(len(line) for line in lines) < 132
    assert lines[2].startswith(middle_cut(deep, SOURCE_CHARS))
    assert "the-file.md" in lines[2] and "…" in lines[2]
    assert lines[-1] == "(long sources are cut in the middle: `knowhub docs --json` has them whole)"
    assert "--json" not in render_documents([replace(_record("a.md"))])


def test_middle_cut_keeps_start_and_end() -> None:
    assert middle_cut("short", 10) == "short"
    cut = middle_cut("abcdefghijklmnopqrstuvwxyz", 10)
    assert len(cut) == 10 and cut.startswith("abc") and cut.endswith("uvwxyz") and "…" in cut


def test_cells_are_measured_as_shown_with_their_escapes() -> None:
    table = render_table([("name", "n"), ("a\x1b[1mb", "1"), ("plain", "22")])
    _, first, second = table.splitlines()
    assert first == "a\\x1b[1mb  1" and second.index("22") == first.rindex("1")
    # 56 characters, 61 as shown: cut, and the note says so.
    listed = render_documents([_record("x" * 50 + "\x1b]0;t\x07.md")])
    assert "\x1b" not in listed and listed.endswith("has them whole)")
