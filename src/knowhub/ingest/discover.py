"""Find the files an ingest run should look at."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from knowhub.ingest.loaders import SUPPORTED_EXTENSIONS

__all__ = ["Candidate", "discover", "matches"]


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
