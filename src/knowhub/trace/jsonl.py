"""Traces as JSON lines in ``DATA_DIR/traces/``, rotated by size; and reading them back."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

from knowhub.surrogates import escape_surrogates
from knowhub.trace.fields import contract_values
from knowhub.trace.record import RENAMED, Trace

__all__ = ["JsonlSink", "read_traces"]

log = logging.getLogger("knowhub.trace")
FILE = "traces.jsonl"


class JsonlSink:
    """Appends one line per trace; past ``max_bytes`` the file rotates (``traces.1.jsonl``
    is the newest old one) and files beyond ``keep`` are deleted.

    Each line is written with one ``write`` call on a file opened for appending, so
    processes sharing a data dir (CLI runs beside a server) never interleave lines.
    """

    def __init__(self, folder: Path, max_bytes: int, keep: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self.keep = keep
        self._lock = threading.Lock()

    def emit(self, trace: Trace) -> None:
        line = _line(trace)
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / FILE
            if path.exists() and path.stat().st_size + len(line) > self.max_bytes:
                self._rotate()
            with path.open("a", encoding="utf-8") as out:
                out.write(line)

    def _rotate(self) -> None:
        oldest = self.folder / f"traces.{self.keep}.jsonl"
        oldest.unlink(missing_ok=True)
        for n in range(self.keep - 1, 0, -1):
            older = self.folder / f"traces.{n}.jsonl"
            if older.exists():
                older.replace(self.folder / f"traces.{n + 1}.jsonl")
        (self.folder / FILE).replace(self.folder / "traces.1.jsonl")


def _line(trace: Trace) -> str:
    """The JSON line for ``trace``; never fails, so the run is always on record."""
    try:
        return _dumps(trace.encodable()) + "\n"
    except (TypeError, ValueError, RecursionError) as exc:  # e.g. a value that loops
        log.warning("trace %s: written without its details (%s)", trace.trace_id, exc)
        bare = Trace(
            trace.trace_id,
            trace.kind,
            trace.interface,
            trace.collection,
            trace.started_at,
            trace.duration_ms,
            error=escape_surrogates(f"trace details lost: {exc}"),
        )
        return _dumps(bare.encodable()) + "\n"


def _dumps(trace: Trace) -> str:
    """The record under the trace contract's names (its derived fields too: the line is
    all a reader of the file has); :meth:`Trace.from_dict` reads the renamed ones back."""
    record = {k: v for k, v in trace.to_dict().items() if k not in RENAMED.values()}
    record |= contract_values(trace)
    # default=str: a value JSON has no type for (a numpy number …) is kept as text.
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)


def read_traces(folder: Path) -> Iterator[Trace]:
    """Every trace on disk, oldest first; a damaged line is skipped with a warning."""
    old = sorted(folder.glob("traces.*.jsonl"), key=lambda p: -int(p.name.split(".")[1]))
    for path in [*old, folder / FILE]:
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                try:
                    yield Trace.from_dict(json.loads(line)).encodable()
                except (ValueError, TypeError) as exc:
                    log.warning("%s:%d: skipped a damaged trace line (%s)", path, number, exc)
