"""Sources that are not folders on this machine: what ``knowhub ingest SPEC``, ``sources:``
in knowhub.yaml and ``knowhub sync`` accept besides paths.

Each kind (a website, a git repository) brings its documents into a mirror folder under
``DATA_DIR/sources/`` and says where each file lives (:class:`~knowhub.ingest.origin.Origin`);
the mirror is then ingested, and pruned, as a folder is. :func:`remote_source` tells a spec
of some kind from a path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Protocol

from knowhub.config import Settings
from knowhub.ingest.origin import Origin

__all__ = ["Fetched", "RemoteSource", "SourceNote", "mirror_root", "remote_source"]

SourceNote = Callable[[str], None]
"""Told a line of what a fetch is doing (``crawled 40 of 120 pages``): progress."""


@dataclass
class Fetched:
    """A source brought up to date in its mirror: the :class:`Origin` to ingest it with, and
    what the fetch met that the ingest report cannot know (``(name, reason)`` pairs: a page
    refused by robots.txt, a redirect to a private address, a member too large)."""

    origin: Origin
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


class RemoteSource(Protocol):
    """One source of some kind, as its spec named it."""

    @property
    def spec(self) -> str:
        """The source as the user wrote it (a URL, ``git+https://…``)."""
        ...

    def fetch(self, settings: Settings, note: SourceNote | None = None) -> Fetched:
        """Bring the mirror up to date (only what changed since the last fetch), or raise a
        :class:`~knowhub.errors.KnowhubError` naming the source and the fix."""
        ...


def mirror_root(settings: Settings, kind: str, key: str) -> Path:
    """The mirror folder of source ``key`` (a slug of its spec) of ``kind``."""
    return settings.data_dir / "sources" / kind / key


def remote_source(spec: str, settings: Settings) -> RemoteSource | None:
    """The source ``spec`` names, or None when it is a path (a file or folder ingested as
    itself). Raises a :class:`~knowhub.errors.KnowhubError` for a spec of a known kind that
    is malformed or not allowed (naming the spec and the fix)."""
    for kind in _KINDS:
        module, function = kind.split(":")
        if (source := getattr(import_module(module), function)(spec, settings)) is not None:
            return source  # type: ignore[no-any-return]
    return None


# Each kind's ``function(spec, settings) -> RemoteSource | None``, as "module:function": the
# kinds import this module (Fetched, mirror_root), so it names them rather than import them.
_KINDS = ("knowhub.ingest.gitsource:git_source",)
