"""What one ingest run did, per file (:class:`IngestReport`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["IngestReport"]


@dataclass
class IngestReport:
    """What one run did, per file."""

    collection: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    # (old source, new source): a document whose file moved, kept under its new path.
    moved: list[tuple[str, str]] = field(default_factory=list)
    retagged: list[str] = field(default_factory=list)  # same bytes, tags changed
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    # Passed over by discovery (a FIFO, a symlink leading out of a served folder, …).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # (source, message): indexed, but with something to fix (bytes that were not text).
    warnings: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    seconds: float = 0.0
    stopped: bool = False  # interrupted: ``not_done`` were left as they were
    not_done: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.stopped

    @property
    def kept(self) -> int:
        """Documents of this run that are in the index, current."""
        return len(self.current())

    def current(self) -> list[str]:
        """Sources of the documents of this run that are in the index, current."""
        moved = [new for _, new in self.moved]
        return [*self.added, *self.updated, *moved, *self.retagged, *self.unchanged]

    def stop_summary(self) -> str:
        """What a stopped run left: ``12 documents kept, 3 not done``."""
        return f"{self.kept} documents kept, {len(self.not_done)} not done"

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "added": self.added,
            "updated": self.updated,
            "moved": [{"from": old, "to": new} for old, new in self.moved],
            "retagged": self.retagged,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "skipped": [{"source": s, "reason": r} for s, r in self.skipped],
            "warnings": [{"source": s, "message": m} for s, m in self.warnings],
            "chunks": self.chunks,
            "embedded": self.embedded,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "not_done": self.not_done,
        }
