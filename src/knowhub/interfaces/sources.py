"""``sources:`` brought up to date: by ``knowhub sync`` (now, those asked for) and by the
servers (each source when its ``refresh`` interval has passed), through the owner's door
(:meth:`knowhub.collection.Collection.ingest_source`: one change of the knowledge base at a
time, under the runtime's writing lock). When each source was last refreshed is kept in
``DATA_DIR/sources/refreshed.json``, so that a restarted server refreshes only what is due.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.config import Settings
from knowhub.config.sources import SourceEntry
from knowhub.errors import ConfigError, KnowhubError
from knowhub.providers.files import write_atomically

if TYPE_CHECKING:
    from knowhub.app import App
    from knowhub.ingest.report import IngestReport
    from knowhub.ingest.sources import Fetched, RemoteSource, SourceNote

__all__ = ["RefreshLog", "SourceRefresher", "SourceRun", "selected_sources", "sync_source"]

log = logging.getLogger("knowhub.sources")

_CHECK_S = 60.0  # how often a server looks for a source that is due
_RETRY_S = 900.0  # how long a source that failed waits before it is tried again


@dataclass
class SourceRun:
    """One source's refresh: its report, or the error that stopped it."""

    entry: SourceEntry
    report: IngestReport | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.report is not None and self.report.ok


def selected_sources(
    settings: Settings, names: Sequence[str] = (), collection: str | None = None
) -> list[SourceEntry]:
    """The ``sources:`` named (all when none is), of ``collection`` when given; an unknown
    name is an error listing the known ones."""
    known = {entry.name: entry for entry in settings.sources}
    missing = [name for name in names if name not in known]
    if missing:
        listed = ", ".join(known) or "none: add sources: to knowhub.yaml"
        raise ConfigError(f"no source named {', '.join(missing)} in sources: (known: {listed})")
    chosen = [known[name] for name in names] if names else list(settings.sources)
    default = settings.collection
    return [e for e in chosen if collection is None or (e.collection or default) == collection]


class RefreshLog:
    """When each source was last refreshed (epoch seconds, by name), written atomically."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "sources" / "refreshed.json"
        self._lock = threading.Lock()

    def read(self) -> dict[str, float]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def mark(self, name: str, when: float) -> None:
        with self._lock:
            data = self.read() | {name: when}
            write_atomically(self.path, json.dumps(data, indent=1, sort_keys=True).encode())

    def due(self, entries: Sequence[SourceEntry], now: float) -> list[SourceEntry]:
        """The entries whose interval has passed since their last refresh (never: due)."""
        last = self.read()
        return [
            e for e in entries if e.refresh_s > 0 and now - last.get(e.name, 0.0) >= e.refresh_s
        ]


def sync_source(
    app: App, entry: SourceEntry, note: Callable[[str], None] | None = None
) -> SourceRun:
    """Refresh one source into its collection; what failed is in the run, not raised."""
    from knowhub.ingest.remote import remote_source

    started = time.time()
    try:
        source = remote_source(entry.spec, app.settings, entry.options())
        if source is None:
            raise ConfigError(f"sources: {entry.shown} is not a URL or repository knowhub reads")
        configured = _Configured(source)  # its reach chosen by the owner, not by the caller
        report = app.collection(entry.collection).ingest_source(configured, note=note)
    except KnowhubError as exc:
        return SourceRun(entry, error=str(exc))
    RefreshLog(app.settings.data_dir).mark(entry.name, started)
    return SourceRun(entry, report)


@dataclass(frozen=True)
class _Configured:
    """A source of knowhub.yaml: the owner chose what it reaches (a repository on this
    machine, with its keys), so any caller that may write its collection refreshes it."""

    source: RemoteSource

    @property
    def spec(self) -> str:
        return self.source.spec

    @property
    def local_reach(self) -> bool:
        return False

    def fetch(self, settings: Settings, note: SourceNote | None = None) -> Fetched:
        return self.source.fetch(settings, note)


class SourceRefresher(threading.Thread):
    """A server's thread that refreshes each of ``sources:`` when it is due, through
    ``writer()`` (the owner's App); :meth:`stop` ends it between sources (a crawl in
    flight ends at the server's :func:`~knowhub.ingest.stopping.stop_ingests`)."""

    def __init__(self, settings: Settings, writer: Callable[[], App]) -> None:
        super().__init__(name="sources refresh", daemon=True)
        self._settings = settings
        self._writer = writer
        self._stopping = threading.Event()
        self._failed: dict[str, float] = {}  # when each source last failed, by name

    def start(self) -> None:
        """Start refreshing, unless no source has an interval (no thread then)."""
        if any(entry.refresh_s > 0 for entry in self._settings.sources):
            super().start()

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout=10)

    def run(self) -> None:
        refreshed = RefreshLog(self._settings.data_dir)
        while not self._stopping.is_set():
            self.refresh_due(refreshed, time.time())
            self._stopping.wait(_CHECK_S)

    def refresh_due(self, refreshed: RefreshLog, now: float) -> None:
        """Refresh each source due at ``now``; one that failed waits ``_RETRY_S`` (or its
        interval, if shorter) before it is tried again: a site that is down is not asked
        every minute."""
        for entry in refreshed.due(self._settings.sources, now):
            if self._stopping.is_set():
                return
            if now - self._failed.get(entry.name, -_RETRY_S) < min(entry.refresh_s, _RETRY_S):
                continue
            if self._refresh(entry):
                self._failed.pop(entry.name, None)
            else:
                self._failed[entry.name] = now

    def _refresh(self, entry: SourceEntry) -> bool:
        log.info("refreshing source %s", entry.name)
        try:
            run = sync_source(
                self._writer(), entry, lambda line: log.info("%s: %s", entry.name, line)
            )
        except Exception:  # a refresher must outlive one bad source (and retry it later)
            log.exception("refreshing source %s failed", entry.name)
            return False
        if run.report is None:
            log.warning("source %s: %s", entry.name, run.error)
            return False
        report = run.report
        log.info(
            "source %s: %d added, %d updated, %d removed, %d unchanged, %d failed; %s",
            entry.name, len(report.added), len(report.updated), len(report.removed),
            len(report.unchanged), len(report.failed), report.fetched,
        )  # fmt: skip
        return True
