"""What one ingest run did, per file (:class:`IngestReport`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from knowhub.ingest.loaders.compressed import COMPRESSED_EXTENSIONS

__all__ = [
    "IngestReport",
    "count_by_type",
    "file_type",
    "types_text",
]

SAMPLE_PER_TYPE = 5
"""Files of one type a summary names (the CLI's text, the MCP tool, a log, a trace); it counts
the others: /usr/share/doc holds 20,000 files knowhub does not read."""


def file_type(name: str) -> str:
    """The type a file's name gives it, lower-case: ``.css``; ``.tar.gz`` and ``.1.gz`` for
    a compressed file (what is inside tells more than the compression); ``(no extension)``."""
    path = PurePosixPath(name)
    suffix = path.suffix.lower()
    if suffix in COMPRESSED_EXTENSIONS:
        suffix = PurePosixPath(path.stem).suffix.lower() + suffix
    return suffix or "(no extension)"


def count_by_type(names: Iterable[str]) -> dict[str, int]:
    """How many of ``names`` are of each :func:`file_type`, the most common first."""
    counts = Counter(file_type(name) for name in names)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _sample_by_type(
    entries: Iterable[tuple[str, str]],
) -> tuple[list[tuple[str, str]], dict[str, int]]:
    """The first :data:`SAMPLE_PER_TYPE` ``(source, reason)`` entries of each
    :func:`file_type`, in order, and how many of each type were left out (the most first)."""
    seen: Counter[str] = Counter()
    shown: list[tuple[str, str]] = []
    left: list[tuple[str, str]] = []
    for source, reason in entries:
        kind = file_type(source)
        seen[kind] += 1
        (shown if seen[kind] <= SAMPLE_PER_TYPE else left).append((source, reason))
    return shown, count_by_type(source for source, _ in left)


def types_text(counts: Mapping[str, int]) -> str:
    """``.gif 5, .css 2``: counts by type as a line says them."""
    return ", ".join(f"{kind} {count}" for kind, count in counts.items())


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
    missing: list[str] = field(default_factory=list)  # paths given that do not exist (failed)
    # Not ingested, though not failed: a type knowhub does not read (a .gif, a man page's
    # source), not a regular file, a symlink leading out of a served folder, a scan unread.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # those skipped for their type
    # (source, message): indexed, but with something to fix (bytes that were not text).
    warnings: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    seconds: float = 0.0
    stopped: bool = False  # interrupted: ``not_done`` were left as they were
    not_done: list[str] = field(default_factory=list)
    # A website's or repository's fetch, counted (``fetched``, ``not_modified`` …).
    fetched: dict[str, int] = field(default_factory=dict)

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

    def not_ingested(self) -> dict[str, str]:
        """Each file of this run that did not go in, failed or skipped, and why."""
        return dict(self.failed) | {s: f"skipped: {r}" for s, r in self.skipped}

    def skipped_by_type(self) -> dict[str, int]:
        """How many files were skipped of each type (:func:`file_type`), the most first."""
        return count_by_type(source for source, _ in self.skipped)

    def skipped_sample(self) -> tuple[list[tuple[str, str]], dict[str, int]]:
        """At most :data:`SAMPLE_PER_TYPE` skipped files of each type, and how many of each
        type that leaves out."""
        return _sample_by_type(self.skipped)

    def notable_skips(self) -> tuple[list[tuple[str, str]], str]:
        """The skipped files worth a log line each, and a line counting the others ('' when
        none): not those only of a type knowhub does not read (a folder of pictures would
        fill a server's log at every sync, :meth:`unsupported_summary` counts them), and
        at most :data:`SAMPLE_PER_TYPE` of a type (a compressed copy beside each page)."""
        unsupported = set(self.unsupported)
        shown, left = _sample_by_type(
            (source, reason) for source, reason in self.skipped if source not in unsupported
        )
        return shown, f"skipped {sum(left.values())} more: {types_text(left)}" if left else ""

    def unsupported_summary(self) -> str:
        """``3 files of types knowhub does not read: .gif 2, .css 1`` ('' when none): the
        one line a log gives them (:meth:`notable_skips` has the others)."""
        if not self.unsupported:
            return ""
        count = len(self.unsupported)
        return (
            f"skipped {count} file{'s' if count > 1 else ''} of types knowhub does not read: "
            f"{types_text(count_by_type(self.unsupported))}"
        )

    def note(self) -> str:
        """What to tell when a run found files and ingested none ('' when it did ingest,
        removed or was stopped): the cause is then easy to miss among counts of zero."""
        if self.current() or self.removed or self.stopped:
            return ""
        found = len(self.skipped) + len(self.failed) - len(self.missing)
        if not found:
            return "nothing ingested: no files found"
        files = f"{found} file{'s' if found > 1 else ''} found"
        if len(self.unsupported) == found:
            return f"nothing ingested: {files}, none of a type knowhub reads"
        return f"nothing ingested: {files}, each skipped or failed (with its reason)"

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
            "skipped_by_type": self.skipped_by_type(),
            "warnings": [{"source": s, "message": m} for s, m in self.warnings],
            "chunks": self.chunks,
            "embedded": self.embedded,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
            "stopped": self.stopped,
            "not_done": self.not_done,
        } | ({"fetched": self.fetched} if self.fetched else {})
