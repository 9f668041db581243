"""Ingest progress in chunks embedded: the pipeline's counts, and what people and agents see.

The counts come from a real run (SQLite, a hashing embedder in small batches); what is shown
is driven by an injected clock, so nothing here is timed.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from knowhub.app import App
from knowhub.ingest.progress import IngestProgress, ProgressTracker
from knowhub.interfaces.progress import LogLines, Notifier, ProgressView, TerminalLine, duration
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.versions.build import build_version
from tests.helpers import fast_settings, write


class Clock:
    """Time that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TickingClock(Clock):
    """One second per reading: a step that costs nothing still takes time."""

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def step(
    event: str = "embedded",
    source: str = "a.md",
    *,
    files: tuple[int, int] = (0, 41),
    chunked: int = 0,
    chunks: tuple[int, int] = (0, 0),
    cached: int = 0,
    file_chunks: int = 0,
) -> IngestProgress:
    return IngestProgress(
        event,  # type: ignore[arg-type]
        source,
        files_done=files[0],
        files_total=files[1],
        files_chunked=chunked,
        chunks_done=chunks[0],
        chunks_total=chunks[1],
        chunks_cached=cached,
        file_chunks=file_chunks,
    )


class SmallBatches(HashingEmbedder):
    """The hashing embedder encoding 4 texts a batch, so one file takes several batches."""

    def __init__(self) -> None:
        super().__init__(64)
        self.batch_size = 4


def ingest_with(tmp_path: Path, docs: Path, progress: object, **overrides: object) -> App:
    settings = fast_settings(
        tmp_path / "data", **{"chunking.size": 60, "chunking.overlap": 0, **overrides}
    )
    app = App(settings, SmallBatches())
    app.collection().ingest([docs], progress=progress)  # type: ignore[arg-type]
    return app


def paragraphs(count: int, word: str) -> str:
    return "\n\n".join(f"{word} paragraph {i} has a few words in it." for i in range(count))


def test_progress_counts_chunks_embedded_and_files(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "big.md", paragraphs(30, "Alpha"))
    write(docs / "small.md", "# Small\n\nOne short paragraph.\n")
    steps: list[IngestProgress] = []
    app = ingest_with(tmp_path, docs, steps.append)
    embedded = sum(d.chunk_count for d in app.collection().documents())
    app.close()

    assert steps[0].event == "started" and steps[0].files_total == 2
    big = [s for s in steps if s.source == "big.md"]
    assert big[0].event == "chunked" and big[0].file_chunks > 8  # known before any is encoded
    assert big[0].chunks_done == 0 and big[0].chunks_total == big[0].file_chunks
    batches = [s for s in big if s.event == "embedded"]
    assert len(batches) >= 2, "a file of several batches reports each"
    assert [s.chunks_done for s in steps] == sorted(s.chunks_done for s in steps)
    assert all(s.chunks_done <= s.chunks_total for s in steps)
    last = steps[-1]
    assert last.event == "finished" and last.chunks_final
    assert (last.files_done, last.files_total) == (2, 2)
    assert last.chunks_done == last.chunks_total == embedded


def test_cached_and_unchanged_files_count_as_files_not_chunks(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "a.md", paragraphs(6, "Bravo"))
    ingest_with(tmp_path, docs, None).close()
    write(docs / "copy.md", paragraphs(6, "Bravo"))  # the same texts: its vectors are cached
    steps: list[IngestProgress] = []
    ingest_with(tmp_path, docs, steps.append).close()
    last = steps[-1]
    assert (last.files_done, last.files_total, last.chunks_done, last.chunks_total) == (2, 2, 0, 0)
    assert last.chunks_cached == 6  # copy.md's, found in the cache
    assert {s.source for s in steps if s.event == "file_done"} == {"a.md", "copy.md"}


def test_a_long_file_is_announced_before_it_is_embedded(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "a.md", paragraphs(8, "Charlie"))  # its batches measure the rate
    write(docs / "b.md", paragraphs(40, "Delta"))
    log: list[str] = []
    view = ProgressView("ingesting", long_file_s=5, clock=TickingClock())
    writer = LogLines(view, log.append, interval_s=3600)

    def progress(step: IngestProgress) -> None:
        writer(step)
        log.append(f"{step.event} {step.source}")

    ingest_with(tmp_path, docs, progress).close()
    [warning] = [line for line in log if line.startswith("warning: ")]  # not about a.md
    assert re.fullmatch(
        r"warning: b\.md: \d\d chunks to embed, about \d+ s at [\d.]+ chunks/s", warning
    ), warning
    assert log[log.index(warning) + 1] == "chunked b.md"  # then its batches
    assert log.index("embedded b.md") > log.index(warning)


def test_warning_comes_before_the_files_batches_when_the_rate_is_known() -> None:
    clock = Clock()
    view = ProgressView("ingesting", long_file_s=60, clock=clock)
    assert view.update(step("chunked", "a.md", chunked=1, chunks=(0, 64), file_chunks=64)) == []
    clock.now += 5  # the model loads: not embedding time
    assert view.update(step(chunked=1, chunks=(16, 64))) == []  # the first batch: no rate yet
    clock.now += 2
    assert view.update(step(chunked=1, chunks=(40, 64))) == []  # 12 chunks/s; a.md is short
    warnings = view.update(
        step("chunked", "big.pdf", chunked=2, chunks=(40, 85_064), file_chunks=85_000)
    )
    assert warnings == ["big.pdf: 85,000 chunks to embed, about 1 h 58 min at 12.0 chunks/s"]


def test_a_file_chunked_before_the_rate_is_warned_about_once_it_is_measured() -> None:
    clock = Clock()
    view = ProgressView("ingesting", long_file_s=60, clock=clock)
    view.update(step("chunked", "big.pdf", chunked=1, chunks=(0, 9000), file_chunks=9000))
    clock.now += 30
    assert view.update(step(chunked=1, chunks=(10, 9000))) == []
    clock.now += 1
    [warning] = view.update(step(chunked=1, chunks=(20, 9000)))
    assert warning == "big.pdf: 9,000 chunks to embed, about 15 min at 10.0 chunks/s"
    clock.now += 1
    assert view.update(step(chunked=1, chunks=(30, 9000))) == []  # once


def test_no_warning_when_disabled_or_done_before_a_rate() -> None:
    clock = Clock()
    view = ProgressView("ingesting", long_file_s=0, clock=clock)
    view.update(step("chunked", "big.pdf", chunked=1, chunks=(0, 9000), file_chunks=9000))
    for done in (10, 20, 30):
        clock.now += 1
        assert view.update(step(chunked=1, chunks=(done, 9000))) == []
    view = ProgressView("ingesting", long_file_s=1, clock=clock)
    view.update(step("chunked", "a.md", chunked=1, chunks=(0, 50), file_chunks=50))
    view.update(step("file_done", "a.md", files=(1, 41), chunked=1, chunks=(50, 50)))
    clock.now += 1
    assert view.update(step(chunked=2, chunks=(60, 70))) == []


def test_line_shows_chunks_files_rate_and_eta() -> None:
    clock = Clock()
    view = ProgressView("ingesting", long_file_s=0, clock=clock)
    assert view.line() == "ingesting: starting"
    view.update(step(files=(14, 41), chunked=41, chunks=(100, 85_000)))
    assert view.line() == "ingesting: 100/85,000 chunks embedded (0.1 %), 14/41 files"
    clock.now += 100
    view.update(step(files=(14, 41), chunked=41, chunks=(1_330, 85_000)))
    assert view.line() == (
        "ingesting: 1,330/85,000 chunks embedded (1.6 %), 14/41 files, 12.3 chunks/s, "
        "ETA 1 h 53 min"
    )


def test_total_and_eta_are_floors_while_files_remain_to_be_chunked() -> None:
    clock = Clock()
    view = ProgressView("ingesting", long_file_s=0, clock=clock)
    view.update(step(files=(3, 41), chunked=5, chunks=(10, 3000)))
    clock.now += 10
    view.update(step(files=(3, 41), chunked=5, chunks=(130, 3000)))
    assert view.line() == (
        "ingesting: 130/3,000+ chunks embedded, 3/41 files, 12.0 chunks/s, ETA at least 4 min"
    )


def test_finished_line_says_how_long_it_took() -> None:
    clock = Clock()
    view = ProgressView("building", long_file_s=0, clock=clock)
    view.update(step("started", "", files=(0, 2)))
    clock.now += 3
    view.update(step("finished", "", files=(2, 2), chunked=2, chunks=(0, 0)))
    assert view.line() == "building: 0/0 chunks embedded, 2/2 files, done in 3.0 s"


def test_line_counts_cached_chunks_apart() -> None:
    view = ProgressView("ingesting", long_file_s=0, clock=Clock())
    view.update(step("file_done", files=(2, 2), chunked=2, chunks=(5, 5), cached=40))
    assert view.line() == "ingesting: 5/5 chunks embedded (100.0 %), 40 from cache, 2/2 files"


def test_a_long_scan_shows_the_page_ocr_is_reading() -> None:
    clock = Clock()
    out = io.StringIO()
    view = ProgressView("ingesting", 0, clock)
    terminal = TerminalLine(view, out, redraw_s=0.1, columns=lambda: 120)
    terminal(replace(step("page_read", "scans/minutes.pdf", files=(3, 41)), page=12, pages=300))
    assert view.line() == (
        "ingesting: 0/0+ chunks embedded, 3/41 files, OCR page 12/300 of scans/minutes.pdf"
    )
    assert out.getvalue().endswith("OCR page 12/300 of scans/minutes.pdf\x1b[K")  # named once


def test_durations_are_as_precise_as_an_estimate_deserves() -> None:
    seconds = (2.34, 45.4, 59.7, 150, 3580, 3600, 6900, 7083)
    assert [duration(s) for s in seconds] == [
        "2.3 s",
        "45 s",
        "1 min",
        "2 min",
        "1 h",
        "1 h",
        "1 h 55 min",
        "1 h 58 min",
    ]


def steps_of_a_run(clock: Clock) -> Iterator[IngestProgress]:
    """A run of 3 files, one second a step."""
    yield step("started", "", files=(0, 3))
    for index, name in enumerate(("a.md", "b.md", "c.md")):
        clock.now += 1
        yield step(
            "chunked",
            name,
            files=(index, 3),
            chunked=index + 1,
            chunks=(index * 10, index * 10 + 10),
            file_chunks=10,
        )
        clock.now += 1
        yield step(
            "file_done",
            name,
            files=(index + 1, 3),
            chunked=index + 1,
            chunks=(index * 10 + 10, index * 10 + 10),
        )
    yield step("finished", "", files=(3, 3), chunked=3, chunks=(30, 30))


def test_log_lines_come_every_interval_and_end_with_the_last_state() -> None:
    clock = Clock()
    lines: list[str] = []
    writer = LogLines(ProgressView("ingest", 0, clock), lines.append, interval_s=2.5)
    for s in steps_of_a_run(clock):
        writer(s)
    assert lines == [
        "ingest: 10/20+ chunks embedded, 1/3 files",  # no rate before a second batch
        "ingest: 30/30 chunks embedded (100.0 %), 3/3 files, 5.0 chunks/s",
        "ingest: 30/30 chunks embedded (100.0 %), 3/3 files, 5.0 chunks/s, done in 6.0 s",
    ]


def test_a_quick_run_logs_no_line_and_interval_zero_logs_every_step() -> None:
    clock = Clock()
    quiet: list[str] = []
    writer = LogLines(ProgressView("ingest", 0, clock), quiet.append, interval_s=10)
    for s in steps_of_a_run(clock):
        writer(s)
    assert quiet == []
    every: list[str] = []
    writer = LogLines(ProgressView("ingest", 0, clock), every.append, interval_s=0)
    for s in steps_of_a_run(clock):
        writer(s)
    assert len(every) == 8 and every[-1].startswith("ingest: 30/30 chunks embedded (100.0 %)")


def test_terminal_line_is_redrawn_in_place_with_the_file_at_hand() -> None:
    clock = Clock()
    out = io.StringIO()
    view = ProgressView("ingesting", 0, clock)
    terminal = TerminalLine(view, out, redraw_s=0.1, columns=lambda: 120)
    for s in steps_of_a_run(clock):
        terminal(s)
    terminal.close()
    text = out.getvalue()
    assert text.count("\r") == 8 and text.endswith(", done in 6.0 s\x1b[K\n")
    assert (
        "\ringesting: 20/30 chunks embedded (66.7 %), 2/3 files, 3.3 chunks/s, ETA 3.0 s · c.md"
        "\x1b[K"
    ) in text


def test_a_narrow_terminal_drops_the_file_name_and_never_wraps() -> None:
    clock = Clock()
    out = io.StringIO()
    terminal = TerminalLine(ProgressView("ingesting", 0, clock), out, columns=lambda: 40)
    terminal(step("chunked", "a-long-name.md", files=(0, 3), chunked=1, chunks=(0, 10)))
    assert out.getvalue() == "\ringesting: 0/10+ chunks embedded, 0/3 f\x1b[K"


def test_terminal_prints_a_warning_above_the_line() -> None:
    clock = Clock()
    out = io.StringIO()
    terminal = TerminalLine(ProgressView("ingesting", 1, clock), out)
    terminal(step("chunked", "a.md", chunked=1, chunks=(0, 40), file_chunks=40))
    clock.now += 1
    terminal(step(chunked=1, chunks=(10, 40)))
    clock.now += 1
    terminal(step(chunked=1, chunks=(20, 40)))
    assert "\r\x1b[Kwarning: a.md: 40 chunks to embed, about 4.0 s at 10.0 chunks/s\n" in (
        out.getvalue()
    )


def test_mcp_notes_count_chunks_rise_strictly_and_end_with_the_total() -> None:
    clock = Clock()
    notes: list[tuple[float, float | None, str]] = []
    notifier = Notifier(ProgressView("ingesting", 0, clock), lambda *n: notes.append(n), 2)
    for s in steps_of_a_run(clock):
        notifier(s)
    assert [(done, total) for done, total, _ in notes] == [(10, None), (20, None), (30, 30)]
    assert notes[-1][2].startswith("ingesting: 30/30 chunks embedded (100.0 %), 3/3 files")
    assert notes[0][2] == "ingesting: 10/10+ chunks embedded, 1/3 files"


def test_mcp_notes_move_with_cached_chunks_too() -> None:
    clock = Clock()
    notes: list[tuple[float, float | None, str]] = []
    notifier = Notifier(ProgressView("ingesting", 0, clock), lambda *n: notes.append(n), 60)
    notifier(step("chunked", "a.md", files=(0, 2), chunked=1, cached=3))
    notifier(step("chunked", "b.md", files=(1, 2), chunked=2, cached=5))  # within the interval
    notifier(step("finished", "", files=(2, 2), chunked=2, cached=5))
    assert [(done, total) for done, total, _ in notes] == [(3, None), (5, 5)]
    assert notes[-1][2] == "ingesting: 0/0 chunks embedded, 5 from cache, 2/2 files, done in 0.0 s"


def test_mcp_notes_rise_while_a_scan_is_read_and_end_with_its_pages_counted() -> None:
    clock = Clock()
    notes: list[tuple[float, float | None, str]] = []
    notifier = Notifier(ProgressView("ingesting", 0, clock), lambda *n: notes.append(n), 0)
    notifier(step("started", "", files=(0, 1)))
    for page in (1, 2, 3):
        clock.now += 1
        read = step("page_read", "scan.pdf", files=(0, 1))
        notifier(IngestProgress(**{**read.__dict__, "page": page, "pages": 3}))
    notifier(step("chunked", "scan.pdf", files=(0, 1), chunked=1, chunks=(0, 2), file_chunks=2))
    notifier(step("finished", "", files=(1, 1), chunked=1, chunks=(2, 2)))
    assert [(done, total) for done, total, _ in notes] == [(1, None), (2, None), (3, None), (5, 5)]
    assert notes[0][2].endswith("OCR page 1/3 of scan.pdf")


def test_mcp_notes_carry_a_warning() -> None:
    clock = Clock()
    notes: list[tuple[float, float | None, str]] = []
    notifier = Notifier(ProgressView("ingesting", 1, clock), lambda *n: notes.append(n), 60)
    notifier(step("chunked", "a.md", files=(0, 1), chunked=1, chunks=(0, 40), file_chunks=40))
    clock.now += 1
    notifier(step(files=(0, 1), chunked=1, chunks=(10, 40)))
    clock.now += 1
    notifier(step(files=(0, 1), chunked=1, chunks=(20, 40)))
    assert len(notes) == 2
    assert notes[1][2].startswith("warning: a.md: 40 chunks to embed, about 4.0 s at 10.0")


def test_tracker_sends_a_batch_only_when_the_count_moved() -> None:
    encoded = [0]
    steps: list[IngestProgress] = []
    tracker = ProgressTracker(steps.append, lambda: encoded[0])
    tracker.started(2)
    tracker.chunked("a.md", 8)
    tracker.embedded("a.md")  # nothing new: no step
    encoded[0] = 4
    tracker.embedded("a.md")
    tracker.file_done("b.md")  # unchanged: its count is known without chunking
    encoded[0] = 6  # a.md failed after 6 of its 8: those 2 will never be encoded
    tracker.file_done("a.md")
    tracker.finished()
    assert [
        (s.event, s.files_done, s.files_chunked, s.chunks_done, s.chunks_total) for s in steps
    ] == [
        ("started", 0, 0, 0, 0),
        ("chunked", 0, 1, 0, 8),
        ("embedded", 0, 1, 4, 8),
        ("file_done", 1, 2, 4, 8),
        ("file_done", 2, 2, 6, 8),
        ("finished", 2, 2, 6, 6),
    ]


def test_a_version_build_reports_one_run_across_its_folders(tmp_path: Path) -> None:
    for folder, word in (("one", "Echo"), ("two", "Foxtrot")):
        write(tmp_path / folder / "a.md", paragraphs(5, word))
        write(tmp_path / folder / "b.md", paragraphs(3, word))
    app = App(fast_settings(tmp_path / "data", **{"chunking.size": 60, "chunking.overlap": 0}))
    app.collection("kb").ingest([tmp_path / "one"])
    # two folders: the build ingests them one by one
    app.collection("kb").ingest([tmp_path / "two"])
    steps: list[IngestProgress] = []
    report = build_version(app, "kb", chunk_size=80, progress=steps.append)
    app.close()
    assert [s.event for s in steps].count("finished") == 1 and steps[-1].event == "finished"
    assert {s.files_total for s in steps} == {4}
    assert [s.files_done for s in steps] == sorted(s.files_done for s in steps)
    assert [s.chunks_done for s in steps] == sorted(s.chunks_done for s in steps)
    assert not any(s.chunks_final for s in steps if s.files_chunked < 4)
    assert report.embedded > 0
    assert (steps[-1].files_done, steps[-1].chunks_done) == (4, report.embedded)
