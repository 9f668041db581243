"""Local mode: one folder served as the ``default`` collection, kept in sync."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from knowhub.config import Settings
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.watch import FolderWatcher

__all__ = ["LocalService"]

log = logging.getLogger("knowhub.mcp")


class LocalService:
    """Indexes ``docs`` on start (cheaply when unchanged), then follows its changes.

    The first sync runs in the background so the server answers at once; until it ends,
    searches see what the store already held.
    """

    def __init__(self, settings: Settings, docs: Path, metrics: Metrics, watch: bool) -> None:
        self.docs = docs.resolve()
        self.kb = KnowledgeBase(settings, self.docs)
        self.metrics = metrics
        self._watcher = (
            FolderWatcher(self.docs, self.sync, settings.server.watch_debounce_ms)
            if watch
            else None
        )
        self.ready = threading.Event()

    def start(self) -> None:
        if not self.docs.exists():
            log.warning("%s does not exist: creating it empty", self.docs)
            self.docs.mkdir(parents=True)
        # Watching starts first, so that nothing changed during the first sync is missed.
        if self._watcher is not None:
            self._watcher.start()
        threading.Thread(target=self._first_sync, name="first sync", daemon=True).start()

    def _first_sync(self) -> None:
        try:
            self.sync()
        except Exception:
            log.exception("indexing %s failed", self.docs)
        finally:
            self.ready.set()

    def sync(self) -> None:
        report = self.kb.ingest([self.docs], self.kb.settings.collection, prune=True)
        self.metrics.record_ingest(report)
        log.info(
            "%s: %d added, %d updated, %d removed, %d unchanged, %d failed, %d embedded",
            self.docs, len(report.added), len(report.updated), len(report.removed),
            len(report.unchanged), len(report.failed), report.embedded,
        )  # fmt: skip
        for source, reason in report.failed:
            log.warning("%s: %s", source, reason)
        for _, reason in report.skipped:
            log.warning("skipped %s", reason)

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        self.kb.close()
