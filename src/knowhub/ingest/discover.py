"""Find the files an ingest run should look at."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from knowhub.ingest.loaders import SUPPORTED_EXTENSIONS
from knowhub.models import DocumentRecord

__all__ = ["Candidate", "Rediscovery", "discover", "matches", "rediscover"]


@dataclass(frozen=True)
class Candidate:
    """A file to ingest: its absolute ``path`` and ``source`` (relative to the given root)."""

    path: str
    source: str
    explicit: bool  # named on the command line, so an unsupported type is an error


def matches(relative: str, patterns: Sequence[str]) -> bool:
    """Glob match on the posix relative path (``*`` crosses folders) or on the file name."""
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(name, p) for p in patterns)


def discover(
    roots: Sequence[Path], include: Sequence[str], exclude: Sequence[str]
) -> Iterator[Candidate]:
    """Yield files under each root (recursively, sorted) that pass include/exclude.

    Folder walks keep only supported extensions; a file named explicitly is always
    yielded so that an unsupported one fails with a reason instead of vanishing.
    Missing roots raise ``FileNotFoundError`` for the caller to report.
    """
    for root in roots:
        absolute = Path(os.path.abspath(root))
        if absolute.is_file():
            yield Candidate(str(absolute), absolute.name, explicit=True)
            continue
        if not absolute.is_dir():
            raise FileNotFoundError(f"{root}: no such file or folder")
        for path in sorted(_walk(absolute)):
            relative = path.relative_to(absolute).as_posix()
            if path.suffix.lower() not in SUPPORTED_EXTENSIONS:
                continue
            if include and not matches(relative, include):
                continue
            if matches(relative, exclude):
                continue
            yield Candidate(str(path), relative, explicit=False)


def _walk(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            yield Path(folder) / name


@dataclass(frozen=True)
class Rediscovery:
    """An ingest run's arguments that find ``records``' files again, each under its old
    source (its citation name) and with its old tags."""

    paths: list[Path]
    tags: dict[str, str]
    include: list[str]
    records: list[DocumentRecord]


def rediscover(records: Sequence[DocumentRecord]) -> list[Rediscovery]:
    """How to ingest these documents' files again (verify's repair, a version's build)."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[DocumentRecord]] = {}
    for record in records:
        tags = tuple(sorted(record.metadata.get("tags", {}).items()))
        groups.setdefault((_root(record), tags), []).append(record)
    found = []
    for (root, tags), group in groups.items():
        if root:  # a folder walk with each source as a literal pattern keeps "guide/a.md"
            found.append(Rediscovery([Path(root)], dict(tags), [_literal(r.source) for r in group],
                                     group))  # fmt: skip
        else:  # a file named on its own gets its file name as source, as it had
            found.append(Rediscovery([Path(r.path) for r in group], dict(tags), [], group))
    return found


def _root(record: DocumentRecord) -> str:
    """The folder the document was ingested from ('' when it was named on its own)."""
    path = Path(record.path).as_posix()
    if "/" not in record.source or not path.endswith("/" + record.source):
        return ""
    return str(Path(record.path[: len(record.path) - len(record.source)]))


def _literal(source: str) -> str:
    """A glob that matches exactly ``source`` (``[``, ``*`` and ``?`` escaped)."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in source)
