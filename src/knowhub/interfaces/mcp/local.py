"""Local mode: one folder served as a collection (the configured one, or the one that
already indexes it), kept in sync."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from knowhub.config import Settings
from knowhub.errors import ConfigError, KnowhubError
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.watch import FolderWatcher
from knowhub.interfaces.progress import LogLines, ProgressView
from knowhub.interfaces.sources import SourceRefresher

__all__ = ["LocalService"]

log = logging.getLogger("knowhub.mcp")


class LocalService:
    """Indexes ``docs`` on start (cheaply when unchanged), then follows its changes.

    The first sync runs in the background so the server answers at once; until it ends,
    searches see what the store already held, and every tool result says that indexing is
    in progress (``kb.indexing()``). A search waits up to ``server.first_sync_wait_s`` for it.
    """

    def __init__(self, settings: Settings, docs: Path, metrics: Metrics, watch: bool) -> None:
        self.docs = docs.resolve()
        if not self.docs.is_dir():
            # A typo would otherwise serve an empty folder, and every search would answer
            # "no results" as if the documents had nothing to say.
            what = "is not a folder" if self.docs.exists() else "does not exist"
            raise ConfigError(
                f"--docs {docs}: {self.docs} {what}: give the folder of documents to serve "
                "(create it first to start with an empty one)"
            )
        self.kb = KnowledgeBase(settings, self.docs, synced=False)
        self.metrics = metrics
        self._watcher = (
            FolderWatcher(self.docs, self.sync, settings.server.watch_debounce_ms)
            if watch
            else None
        )
        self.ready = self.kb.synced
        # sources: of knowhub.yaml refreshed on their interval, through the ingests' App.
        self._sources = SourceRefresher(settings, lambda: self.kb.writer)

    def start(self) -> None:
        # Watching starts first, so that nothing changed during the first sync is missed.
        if self._watcher is not None:
            self._watcher.start()
        threading.Thread(target=self._first_sync, name="first sync", daemon=True).start()
        self._sources.start()

    def _first_sync(self) -> None:
        try:
            self.sync()
        except KnowhubError as exc:  # says what and the fix (a shutdown stops it, say)
            log.warning("indexing %s: %s", self.docs, exc)
        except Exception:
            log.exception("indexing %s failed", self.docs)
        finally:
            self.ready.set()

    def sync(self) -> None:
        # A document whose file is gone goes, and so does one of a folder renamed to this
        # one and not found again here; another folder's (a collection of several, one of
        # them unmounted) are kept.
        report = self.kb.ingest(
            [self.docs],
            self.kb.collection,
            prune=True,
            prune_renamed=True,
            progress=self._progress(),
        )
        self.metrics.record_ingest(report)
        log.info(
            "%s: %d added, %d updated, %d removed, %d unchanged, %d failed, %d embedded, %d moved",
            self.docs,
            len(report.added),
            len(report.updated),
            len(report.removed),
            len(report.unchanged),
            len(report.failed),
            report.embedded,
            len(report.moved),
        )
        for source, reason in report.failed:
            log.warning("%s: %s", source, reason)
        notable, more = report.notable_skips()
        for _, reason in notable:
            log.warning("skipped %s", reason)
        if more:
            log.warning("%s", more)
        if unsupported := report.unsupported_summary():
            log.info("%s: %s", self.docs, unsupported)
        for _, warning in report.warnings:  # indexed, but the user has something to fix
            log.warning("%s", warning)

    def _progress(self) -> LogLines:
        """A sync's progress in the server log, in chunks embedded, as `knowhub ingest` shows
        it; the agent sees it in each result's ``indexing`` field."""
        ingest = self.kb.settings.ingest
        view = ProgressView(f"indexing {self.docs}", ingest.long_file_warning_s)
        return LogLines(view, log.info, ingest.progress_interval_s, warn=log.warning)

    def close(self) -> None:
        self._sources.stop()
        if self._watcher is not None:
            self._watcher.stop()
        self.kb.close()
