"""One served data directory: queries and ingests side by side.

Queries use the reader App's connection and ingests the writer's: SQLite's WAL lets a
reader see the last committed state while a document is being replaced, so a long
ingest never blocks searching. Ingests are serialised by the writer's runtime (one change
at a time, ``Runtime.writing``), and confined to the served folder: a symlink in it
leading elsewhere is skipped, so nothing outside is served.
While one runs, :meth:`KnowledgeBase.indexing` says how far it got, so that every tool
result can tell the agent its answer may be incomplete. The folder goes into one collection,
:attr:`KnowledgeBase.collection` (``knowhub.default_collection.folder_collection``): the
configured one, or the one that already indexes the folder.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.app import App
from knowhub.caller import LOCAL_USER, Caller
from knowhub.config import Settings
from knowhub.default_collection import folder_collection
from knowhub.errors import ConfigError
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.providers.embedders.base import Embedder
from knowhub.runtime import Runtime

if TYPE_CHECKING:  # ingest loads on the first sync, off the server's start (cold start)
    from knowhub.collection import Collection
    from knowhub.ingest.pipeline import IngestReport
    from knowhub.ingest.sources import RemoteSource

__all__ = ["Indexing", "KnowledgeBase"]


@dataclass(frozen=True)
class Indexing:
    """An ingest in progress: ``files_total`` is None while its files are being listed."""

    collection: str
    first_sync: bool  # the served folder has not been indexed whole since the start
    files_done: int = 0
    files_total: int | None = None
    chunks_done: int = 0  # chunks encoded so far, of the chunks_total known so far
    chunks_total: int = 0


class KnowledgeBase:
    def __init__(
        self,
        settings: Settings,
        root: Path,
        embedder: Embedder | None = None,
        synced: bool = True,
    ) -> None:
        self.settings = settings
        self.root = root  # every ingested file must resolve inside it
        # A call naming no collection means the served folder's (knowhub.default_collection).
        self.reader = App(Runtime(settings, embedder, "mcp", served=self._served))
        # Set once the served folder has been indexed whole (``synced=False``: not yet).
        self.synced = threading.Event()
        if synced:
            self.synced.set()
        # Replaced whole (never mutated), so a reader in another thread sees one state.
        self._indexing: Indexing | None = None
        self._collection: str | None = None
        self._ambiguous: str | None = None  # why folder_collection could not tell
        self._collection_lock = threading.Lock()
        self._writer: App | None = None  # built on the first ingest (it loads the embedder)
        self._writer_lock = threading.Lock()
        # Called after an ingest that added, changed, moved or removed documents (the MCP
        # server tells its clients that the resource list changed).
        self.on_change: list[Callable[[], None]] = []

    def _served(self) -> str:
        return self.collection

    @property
    def collection(self) -> str:
        """The collection the served folder is indexed into, found on first use (it reads
        every collection's records: not on the server's start, which answers the handshake
        first, and once, whatever it finds).

        Raises:
            ConfigError: several collections index the folder and none is configured.
        """
        with self._collection_lock:
            if self._collection is None and self._ambiguous is None:
                try:
                    self._collection = folder_collection(
                        self.reader.store, self.settings, self.root
                    )
                except ConfigError as exc:
                    self._ambiguous = str(exc)
            if self._collection is None:
                raise ConfigError(str(self._ambiguous))
            return self._collection

    @property
    def writer(self) -> App:
        """The App of the ingests' connection, built once (two at once would each take a
        lock of their own)."""
        with self._writer_lock:
            if self._writer is None:
                embedder = self.reader.embedder
                self._writer = App(Runtime(self.settings, embedder, "mcp", self._served))
            return self._writer

    def ingest(
        self,
        paths: Sequence[Path],
        collection: str,
        tags: Mapping[str, str] | None = None,
        prune: bool = False,
        progress: Progress | None = None,
        prune_renamed: bool = False,
        caller: Caller = LOCAL_USER,
    ) -> IngestReport:
        """Ingest into ``collection`` as ``caller`` may (its handle refuses a read-only one,
        its data scope limits what it writes), one change at a time."""
        return self._turn(
            caller,
            collection,
            progress,
            lambda handle, track: handle.ingest(
                paths,
                tags,
                prune=prune,
                progress=track,
                confine=self.root,
                prune_renamed=prune_renamed,
            ),
        )

    def ingest_source(
        self,
        source: RemoteSource,
        collection: str,
        tags: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        caller: Caller = LOCAL_USER,
    ) -> IngestReport:
        """Fetch a website (or repository) and ingest it into ``collection`` through
        ``caller``'s handle: refused, before anything is fetched, to one that may not write."""
        return self._turn(
            caller,
            collection,
            progress,
            lambda handle, track: handle.ingest_source(source, tags, progress=track),
        )

    def _turn(
        self,
        caller: Caller,
        collection: str,
        progress: Progress | None,
        run: Callable[[Collection, Progress], IngestReport],
    ) -> IngestReport:
        """``run(handle, track)`` on ``caller``'s handle of ``collection``, in its turn, what
        :meth:`indexing` tells following its progress; those told of changes are told after."""

        def track(step: IngestProgress) -> None:
            self._indexing = Indexing(
                collection,
                first,
                step.files_done,
                step.files_total,
                step.chunks_done,
                step.chunks_total,
            )
            if progress is not None:
                progress(step)

        with self.writer.runtime.writing:  # its turn: what indexing() tells is this ingest
            first = not self.synced.is_set()
            self._indexing = Indexing(collection, first)
            try:
                report = run(self.writer.for_caller(caller).collection(collection), track)
            finally:
                self._indexing = None
        if report.added or report.updated or report.removed or report.moved:
            for tell in self.on_change:  # after the turn: no ingest waits on the telling
                tell()
        return report

    def indexing(self) -> Indexing | None:
        """The ingest running now (or the first sync not begun yet); None when idle."""
        if self._indexing is None and not self.synced.is_set():
            # Not self.collection: this runs on the event loop, and must not read the store.
            return Indexing(self._collection or self.settings.collection, first_sync=True)
        return self._indexing

    def chunks(self) -> int:
        return sum(c.chunks for c in self.reader.collections())

    def close(self) -> None:
        """Close both connections, after the ingest running (if any) ends."""
        with self._writer_lock:
            writer = self._writer
        if writer is not None:
            with writer.runtime.writing:
                writer.runtime.close()
        self.reader.runtime.close()
