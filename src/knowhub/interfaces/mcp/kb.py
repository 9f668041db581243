"""One served data directory: queries and ingests side by side.

Queries use the reader App's connection and ingests the writer's: SQLite's WAL lets a
reader see the last committed state while a document is being replaced, so a long
ingest never blocks searching. Ingests are serialised by a lock, and confined to the
served folder: a symlink in it leading elsewhere is skipped, so nothing outside is served.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

from knowhub.app import App
from knowhub.config import Settings
from knowhub.ingest.pipeline import IngestReport, Progress
from knowhub.providers.embedders.base import Embedder

__all__ = ["KnowledgeBase"]


class KnowledgeBase:
    def __init__(self, settings: Settings, root: Path, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.root = root  # every ingested file must resolve inside it
        self.reader = App(settings, embedder, interface="mcp")
        self._write_lock = threading.Lock()

    @cached_property
    def writer(self) -> App:
        return App(self.settings, self.reader.embedder, interface="mcp")

    def ingest(
        self,
        paths: Sequence[Path],
        collection: str | None = None,
        tags: Mapping[str, str] | None = None,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestReport:
        with self._write_lock:
            return self.writer.ingest(
                paths, collection, tags, prune=prune, progress=progress, confine=self.root
            )

    def chunks(self) -> int:
        return sum(c.chunks for c in self.reader.collections())

    def close(self) -> None:
        with self._write_lock:
            self.reader.close()
            if "writer" in self.__dict__:
                self.writer.close()
