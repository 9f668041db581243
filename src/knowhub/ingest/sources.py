"""Sources that are not folders on this machine: what ``knowhub ingest SPEC``, ``sources:``
in knowhub.yaml and ``knowhub sync`` accept besides paths.

Each kind (a website, a git repository) brings its documents into a mirror folder under
``DATA_DIR/sources/`` and says where each file lives (:class:`~knowhub.ingest.origin.Origin`);
the mirror is then ingested, and pruned, as a folder is.
:func:`knowhub.ingest.remote.remote_source` tells a spec of some kind from a path (apart
from this contract, which each kind's module imports: no import cycle).
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from knowhub.config import Settings
from knowhub.ingest.origin import Origin

__all__ = [
    "Fetched",
    "RemoteSource",
    "SourceNote",
    "SourceOptions",
    "mirror_lock",
    "mirror_root",
]

SourceNote = Callable[[str], None]
"""Told a line of what a fetch is doing (``crawled 40 of 120 pages``): progress."""

SourceOptions = Mapping[str, Any]
"""A kind's own options (a website's ``depth``, ``max_pages``, ``include``, ``exclude``):
from the command line or a ``sources:`` entry; a kind refuses a key it does not know."""


@dataclass
class Fetched:
    """A source brought up to date in its mirror: the :class:`Origin` to ingest it with, and
    what the fetch met that the ingest report cannot know (``(name, reason)`` pairs: a page
    refused by robots.txt, a redirect to a private address, a member too large)."""

    origin: Origin
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    # What the fetch did, counted (``fetched``, ``not_modified``, ``removed`` …): progress
    # lines and the report's ``fetched``.
    counts: dict[str, int] = field(default_factory=dict)


class RemoteSource(Protocol):
    """One source of some kind, as its spec named it."""

    @property
    def spec(self) -> str:
        """The source as the user wrote it (a URL, ``git+https://…``)."""
        ...

    @property
    def local_reach(self) -> bool:
        """Whether fetching it runs with the server's own reach (its files, its SSH keys,
        any address): then only a caller limited in nothing may ingest it."""
        ...

    def fetch(self, settings: Settings, note: SourceNote | None = None) -> Fetched:
        """Bring the mirror up to date (only what changed since the last fetch), or raise a
        :class:`~knowhub.errors.KnowhubError` naming the source and the fix."""
        ...


def mirror_root(settings: Settings, kind: str, key: str) -> Path:
    """The mirror folder of source ``key`` (a slug of its spec) of ``kind``."""
    return settings.data_dir / "sources" / kind / key


@contextmanager
def mirror_lock(root: Path) -> Iterator[None]:
    """Hold the mirror under ``root`` for the block: two fetches of one source (two
    processes, or two threads) wait for each other instead of writing it at once."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / "lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
