"""A source that is not a folder, ingested: fetched into its mirror, then the mirror
ingested with pruning (a page gone from the site leaves the collection), the fetch's own
findings added to the report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from knowhub.config import Settings
from knowhub.ingest.origin import Origin
from knowhub.ingest.progress import Progress
from knowhub.ingest.report import IngestReport
from knowhub.ingest.sources import RemoteSource, SourceNote, SourceOptions

__all__ = ["MirrorIngest", "fetched_text", "ingest_remote", "remote_source"]


def remote_source(
    spec: str, settings: Settings, options: SourceOptions | None = None
) -> RemoteSource | None:
    """The source ``spec`` names, or None when it is a path (a file or folder ingested as
    itself). Raises a :class:`~knowhub.errors.KnowhubError` for a spec of a known kind that
    is malformed or not allowed, or given an option it does not take (naming the spec and
    the fix). A kind's module loads only when a spec of that kind comes."""
    del settings  # each kind reads the settings it needs when it fetches
    from knowhub.ingest.web.source import WebSource, is_web_url

    if is_web_url(spec):
        return WebSource.from_spec(spec, options)
    from knowhub.ingest.gitsource import git_source

    return git_source(spec, options)


class MirrorIngest(Protocol):
    """Ingests a mirror's folder with its origin, pruning (the collection's door)."""

    def __call__(
        self, paths: Sequence[Path], *, progress: Progress | None, origin: Origin
    ) -> IngestReport: ...


def ingest_remote(
    source: RemoteSource,
    settings: Settings,
    ingest: MirrorIngest,
    progress: Progress | None,
    note: SourceNote | None,
) -> IngestReport:
    """Fetch ``source`` and ingest its mirror; what the fetch skipped or failed is in the
    report beside the files', and its counts in ``report.fetched``."""
    fetched = source.fetch(settings, note)
    report = ingest([fetched.origin.root], progress=progress, origin=fetched.origin)
    report.skipped += fetched.skipped
    report.failed += fetched.failed
    report.fetched = dict(fetched.counts)
    return report


def fetched_text(counts: dict[str, int]) -> str:
    """``pages: 40 fetched, 2 not modified, 1 removed``: a fetch's counts as a line says."""
    order = ["fetched", "not_modified", "removed", "not_found", "skipped", "failed"]
    named = sorted(counts, key=lambda k: (order.index(k) if k in order else len(order), k))
    return "pages: " + ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in named)
