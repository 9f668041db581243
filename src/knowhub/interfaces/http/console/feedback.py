"""Feedback on answers: "helpful" or "not helpful" (with a comment), kept with the trace.

One JSONL file, ``<data_dir>/feedback/feedback.jsonl``, a record a line, keyed by the trace
id and who gave it: a second vote of the same person on the same trace replaces the first
(the newest line wins when read). Bounded: a comment is cut to :data:`MAX_COMMENT`
characters, and once the file passes ``max_bytes`` it is rewritten with only the newest
record of each key, oldest keys dropped until it holds half of ``max_bytes`` — so a busy
console never fills the disk, and recent feedback is what stays.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from knowhub.errors import QueryError

__all__ = ["MAX_COMMENT", "Feedback", "FeedbackStore", "feedback_store"]

MAX_COMMENT = 2000
MAX_BYTES = 4 * 1024 * 1024
_LOCK = threading.Lock()  # one writer at a time per process (the server is one process)


@dataclass(frozen=True)
class Feedback:
    trace_id: str
    helpful: bool
    comment: str
    by: str  # the token's name
    at: str  # ISO 8601, UTC

    @property
    def key(self) -> tuple[str, str]:
        return self.trace_id, self.by


class FeedbackStore:
    def __init__(self, folder: Path, max_bytes: int = MAX_BYTES) -> None:
        self.path = folder / "feedback.jsonl"
        self.max_bytes = max_bytes

    def add(self, trace_id: str, helpful: bool, comment: str, by: str) -> Feedback:
        """Record ``by``'s vote on ``trace_id`` (replacing an earlier one of theirs)."""
        if not trace_id or len(trace_id) > 128:
            raise QueryError(f"trace id {trace_id!r} is empty or too long: give a trace's id")
        at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        entry = Feedback(trace_id, helpful, comment.strip()[:MAX_COMMENT], by, at)
        line = json.dumps(asdict(entry), ensure_ascii=False) + "\n"
        with _LOCK:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line)
            if self.path.stat().st_size > self.max_bytes:
                self._compact()
        return entry

    def for_trace(self, trace_id: str) -> list[Feedback]:
        """Everyone's latest feedback on ``trace_id``, oldest first."""
        return [f for f in self.latest() if f.trace_id == trace_id]

    def latest(self) -> list[Feedback]:
        """The newest record of each (trace, person), in the order they were last given."""
        found: dict[tuple[str, str], Feedback] = {}
        for entry in self._read():
            found.pop(entry.key, None)  # re-inserted: dict order is "last given"
            found[entry.key] = entry
        return list(found.values())

    def _read(self) -> list[Feedback]:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            try:
                out.append(Feedback(**json.loads(line)))
            except (ValueError, TypeError):  # a torn or foreign line: the others still count
                continue
        return out

    def _compact(self) -> None:
        """Keep the newest record per key, newest keys first, within half of max_bytes."""
        kept: list[str] = []
        size = 0
        for entry in reversed(self.latest()):
            line = json.dumps(asdict(entry), ensure_ascii=False) + "\n"
            size += len(line.encode("utf-8"))
            if size > self.max_bytes // 2:
                break
            kept.append(line)
        temporary = self.path.with_suffix(".jsonl.tmp")
        temporary.write_text("".join(reversed(kept)), encoding="utf-8")
        temporary.replace(self.path)  # readers see the old file or the new, never half


def feedback_store(data_dir: str | Path) -> FeedbackStore:
    """The store of the data dir ``data_dir``."""
    return FeedbackStore(Path(data_dir) / "feedback")
