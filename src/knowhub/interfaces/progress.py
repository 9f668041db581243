"""Ingest progress as people and agents see it: chunks embedded, a rate, an ETA, warnings.

:class:`ProgressView` turns the pipeline's :class:`~knowhub.ingest.progress.IngestProgress`
steps into text, with an injected clock (pure, so tests time nothing). Three writers show it:
:class:`TerminalLine` redraws one line on a terminal, :class:`LogLines` writes a line every
``ingest.progress_interval_s`` to a log or CI output, and :class:`Notifier` sends MCP
progress notifications. Each prints a warning before a file whose chunks would take longer
than ``ingest.long_file_warning_s`` to embed.

The rate is measured from the first batch encoded on, so that loading the model and starting
workers do not count as embedding time; until a second batch is in there is no rate, no ETA
and no warning. While files remain to be chunked the total is a floor ("3,000+ chunks") and
so is the ETA ("at least").
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from knowhub.config import IngestSettings
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.interfaces.terminal import printable

__all__ = [
    "LogLines",
    "Notifier",
    "ProgressView",
    "TerminalLine",
    "duration",
    "ingest_progress",
]

Clock = Callable[[], float]


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``1 h 55 min``: as precise as an estimate deserves."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 59.5:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


class ProgressView:
    """What a run's steps mean: counts, the embedding rate, the ETA, long-file warnings."""

    def __init__(self, label: str, long_file_s: float, clock: Clock = time.monotonic) -> None:
        self.label = label
        self.long_file_s = long_file_s  # 0: never warn
        self._clock = clock
        self.started = self.at = clock()  # ``at``: when the latest step came
        self.last: IngestProgress | None = None
        self.source = ""  # the latest file a step named
        self._mark: tuple[float, int] | None = None  # (time, chunks done) at the first batch
        self._unjudged: dict[str, int] = {}  # files chunked before there was a rate

    def update(self, step: IngestProgress) -> list[str]:
        """Take in a step; return the warnings to show now."""
        self.at, self.last = self._clock(), step
        self.source = step.source or self.source
        if self._mark is None and step.chunks_done > 0:
            self._mark = (self.at, step.chunks_done)
        if step.event == "chunked" and step.file_chunks:
            self._unjudged[step.source] = step.file_chunks
        elif step.event == "file_done":
            self._unjudged.pop(step.source, None)  # too late to warn about it
        rate = self.rate()
        if rate is None or not self._unjudged:
            return []
        judged, self._unjudged = self._unjudged, {}
        if not self.long_file_s:
            return []
        return [
            f"{source}: {chunks:,} chunks to embed, about {duration(chunks / rate)} at "
            f"{rate:,.1f} chunks/s"
            for source, chunks in judged.items()
            if chunks / rate > self.long_file_s
        ]

    def rate(self) -> float | None:
        """Chunks embedded per second since the first batch; None before a second one."""
        if self._mark is None or self.last is None:
            return None
        since, first = self._mark
        if self.last.chunks_done <= first or self.at <= since:
            return None
        return (self.last.chunks_done - first) / (self.at - since)

    def eta_s(self) -> float | None:
        """Seconds to embed the chunks known so far; None without a rate or work left."""
        rate, step = self.rate(), self.last
        if rate is None or step is None or step.chunks_total <= step.chunks_done:
            return None
        return (step.chunks_total - step.chunks_done) / rate

    def line(self) -> str:
        """``ingesting: 1,200/85,000 chunks embedded (1.4 %), 14/41 files, 12.3 chunks/s,
        ETA 1 h 55 min``."""
        step = self.last
        if step is None:
            return f"{self.label}: starting"
        parts = [_chunks(step), f"{step.files_done:,}/{step.files_total:,} files"]
        if step.chunks_cached:
            parts.insert(1, f"{step.chunks_cached:,} from cache")
        rate, eta = self.rate(), self.eta_s()
        if rate is not None:
            parts.append(f"{rate:,.1f} chunks/s")
        if step.event == "page_read":  # a scan: minutes may pass before its chunks are known
            parts.append(f"OCR page {step.page:,}/{step.pages:,} of {step.source}")
        if step.event == "transformed":  # an LLM call a chunk, before its chunks are counted
            parts.append(f"LLM chunk {step.page:,}/{step.pages:,} of {step.source}")
        if step.event == "finished":
            parts.append(f"done in {duration(self.at - self.started)}")
        elif eta is not None:
            parts.append(f"ETA {'' if step.chunks_final else 'at least '}{duration(eta)}")
        return f"{self.label}: {', '.join(parts)}"


def _chunks(step: IngestProgress) -> str:
    done, total = step.chunks_done, step.chunks_total
    if not step.chunks_final:
        return f"{done:,}/{total:,}+ chunks embedded"
    share = f" ({100 * done / total:.1f} %)" if total else ""
    return f"{done:,}/{total:,} chunks embedded{share}"


class LogLines:
    """For logs and CI: a line at most every ``interval_s`` (the first after that long, so a
    quick run prints none), the last state once any was printed, and every warning."""

    def __init__(
        self,
        view: ProgressView,
        write: Callable[[str], None],
        interval_s: float,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.view = view
        self._write = write
        self._warn = warn or (lambda text: write(f"warning: {text}"))
        self.interval_s = interval_s
        self._last = view.started
        self._printed = False

    def __call__(self, step: IngestProgress) -> None:
        for warning in self.view.update(step):
            self._warn(warning)
        due = self.view.at - self._last >= self.interval_s
        if due or (step.event == "finished" and self._printed):
            self._write(self.view.line())
            self._last, self._printed = self.view.at, True

    def close(self) -> None:
        """Nothing to tidy: each line is whole."""


class TerminalLine:
    """For a terminal: one line redrawn in place (at most every ``redraw_s``), ending with
    the file at hand; a warning is printed above it."""

    def __init__(
        self,
        view: ProgressView,
        stream: TextIO,
        redraw_s: float = 0.1,
        columns: Callable[[], int] = lambda: shutil.get_terminal_size().columns,
    ) -> None:
        self.view = view
        self._stream = stream
        self._redraw_s = redraw_s
        self._columns = columns
        self._drawn_at: float | None = None

    def __call__(self, step: IngestProgress) -> None:
        warnings = self.view.update(step)
        for warning in warnings:
            self._stream.write(f"\r\x1b[Kwarning: {printable(warning)}\n")
        due = self._drawn_at is None or self.view.at - self._drawn_at >= self._redraw_s
        if warnings or due or step.event in ("started", "finished"):
            self._draw()

    def _draw(self) -> None:
        width = self._columns() - 1  # a wrapped line could not be redrawn in place
        text, source = printable(self.view.line()), printable(self.view.source)
        room = width - len(text) - 3
        last = self.view.last
        if (
            last is not None
            and last.event not in ("finished", "page_read", "transformed")
            and room >= 8
        ):
            text += f" · {source if len(source) <= room else '…' + source[-room + 1 :]}"
        self._stream.write(f"\r{text[:width]}\x1b[K")
        self._stream.flush()
        self._drawn_at = self.view.at

    def close(self) -> None:
        if self._drawn_at is not None:
            self._stream.write("\n")  # what comes next starts on a line of its own
            self._stream.flush()


class Notifier:
    """For an MCP client: progress notifications counting chunks embedded (or found in the
    embedding cache), scanned pages read and LLM transform calls, with the total once it is
    final and :meth:`ProgressView.line` as the message; at most one every ``interval_s``, the
    last always. The progress value must increase (the MCP spec), so a step that moved none
    of them sends nothing; a warning rides on the next notification."""

    def __init__(
        self,
        view: ProgressView,
        send: Callable[[float, float | None, str], None],
        interval_s: float = 1.0,
    ) -> None:
        self.view = view
        self._send = send
        self.interval_s = interval_s
        self._sent = 0  # chunks done at the last notification
        # Scanned pages read and LLM calls made: minutes of a long scan move no chunk, and
        # the progress value must still rise.
        self._steps = 0
        self._sent_at: float | None = None
        self._warnings: list[str] = []

    def __call__(self, step: IngestProgress) -> None:
        self._warnings += self.view.update(step)
        if step.event in ("page_read", "transformed"):
            self._steps += 1
        done = step.chunks_done + step.chunks_cached + self._steps
        if done <= self._sent:
            return
        due = self._sent_at is None or self.view.at - self._sent_at >= self.interval_s
        if due or self._warnings or step.event == "finished":
            notes = "".join(f"warning: {w}; " for w in self._warnings)
            # Every page read and LLM call comes before its file's chunks are final.
            final = step.chunks_total + step.chunks_cached + self._steps
            total = final if step.chunks_final else None
            self._send(done, total, notes + self.view.line())
            self._sent, self._sent_at, self._warnings = done, self.view.at, []


@contextmanager
def ingest_progress(
    settings: IngestSettings, label: str = "ingesting", stream: TextIO | None = None
) -> Iterator[Progress]:
    """The CLI's progress for an ingest run on ``stream`` (stderr): a line redrawn on a
    terminal, else a line every ``settings.progress_interval_s``."""
    out = stream or sys.stderr
    view = ProgressView(label, settings.long_file_warning_s)
    writer: TerminalLine | LogLines
    if out.isatty():
        writer = TerminalLine(view, out)
    else:
        writer = LogLines(
            view,
            lambda line: print(printable(line), file=out, flush=True),
            settings.progress_interval_s,
        )
    try:
        yield writer
    finally:
        writer.close()
