"""Shared mode: one process serving many folders, each a session with its own index.

Sessions are registered in ``DATA_DIR/sessions.sqlite3`` (:class:`SessionStore`), which every
replica serving the data dir reads: any replica answers any call for any session, loading
its index (``DATA_DIR/sessions/<id>/``) on demand. A loaded session holds an open store and
a folder watcher in this process; one idle past the timeout here is unloaded and reloads on
its next call, re-syncing its folder (a stat per unchanged file, nothing re-embedded).
"""

from __future__ import annotations

import difflib
import logging
import secrets
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.app import App
from knowhub.config import Settings
from knowhub.errors import KnowhubError
from knowhub.ingest.progress import Progress
from knowhub.interfaces.index_metrics import IndexSize
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.session_store import SessionRecord, SessionStore
from knowhub.interfaces.mcp.tools.base import inside_root
from knowhub.interfaces.mcp.watch import FolderWatcher
from knowhub.providers.embedders.base import Embedder

if TYPE_CHECKING:  # not imported by the server's start (cold start)
    from knowhub.ingest.pipeline import IngestReport

__all__ = ["SessionRecord", "SessionRegistry"]

log = logging.getLogger("knowhub.mcp")


@dataclass
class _Session:
    record: SessionRecord
    kb: KnowledgeBase | None = None
    watcher: FolderWatcher | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_use: int = 0  # tool calls holding the session: the idle reaper leaves it loaded


class SessionRegistry:
    def __init__(
        self, settings: Settings, path_root: Path, idle_timeout_s: float | None, metrics: Metrics
    ) -> None:
        self.settings = settings
        self.root = path_root.resolve()
        self.idle_timeout_s = idle_timeout_s
        self.metrics = metrics
        self._store = SessionStore(Path(settings.data_dir))
        self._lock = threading.Lock()
        # The sessions this process has used: loaded, or unloaded since. The store is the
        # truth of which exist; another replica may register or unregister any meanwhile.
        self._sessions: dict[str, _Session] = {}
        self._embedder_app = App(settings)  # holds the one embedder every session shares
        metrics.track_sessions(self._store.count, self.loaded_count)

    # -- control plane ---------------------------------------------------------

    def register(
        self,
        relative: str,
        description: str,
        progress: Progress | None = None,
        create: bool = False,
    ) -> tuple[SessionRecord, int, bool]:
        """Create (or return) the session for ``relative``; index it now.

        A folder that does not exist is refused unless ``create``: a typo would otherwise
        give a session serving an empty folder, whose every search finds nothing.

        Returns:
            The session's record, its chunk count, and whether its folder was created.
        """
        if not relative.strip():
            raise KnowhubError("path is empty: give a folder relative to --path-root")
        if Path(relative).is_absolute():
            raise KnowhubError(
                f"path {relative!r} is absolute: give it relative to --path-root ({self.root})"
            )
        folder = inside_root(self.root, relative)
        created = not folder.exists()
        if created and not create:
            raise KnowhubError(_missing(relative, folder, self.root))
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # e.g. it, or a folder on the way, is a file
            raise KnowhubError(
                f"path {relative!r}: cannot use {folder} as a folder ({exc.strerror}): give a "
                "folder (existing or new) relative to --path-root, not a file"
            ) from exc
        now = time.time()
        record = self._store.register(
            SessionRecord(
                session_id=secrets.token_hex(8),
                path=str(folder),
                relative_path=str(folder.relative_to(self.root)),
                description=description,
                created_at=now,
                last_access=now,
            )
        )
        self._store.touch(record.session_id, now)
        session = self._local(record)
        session.record.last_access = now
        kb = self._load(session, progress)
        return session.record, kb.chunks(), created

    def unregister(self, session_id: str) -> SessionRecord:
        record = self._store.remove(session_id)
        if record is None:
            raise KnowhubError(self._unknown(session_id))
        # Another replica that has it loaded unloads it on its next call for it, or when
        # its reaper next runs (:meth:`unload_idle`); its calls for it are refused now.
        self._forget(session_id)
        self._remove_index(session_id)
        return record

    def sessions(self) -> list[tuple[SessionRecord, bool, int | None]]:
        """Every session → (record, loaded here, chunks: counted if loaded, else as stored)."""
        rows = []
        for record in self._store.all():
            with self._lock:
                session = self._sessions.get(record.session_id)
            if session is None or session.kb is None:  # as the last unload anywhere stored
                rows.append((record, False, record.chunks))
            else:
                rows.append((record, *self._counted(session)))
        return rows

    def _counted(self, session: _Session) -> tuple[bool, int | None]:
        """Whether ``session`` is loaded, and its chunks (as stored when it is not)."""
        kb = session.kb
        if kb is None:
            return False, session.record.chunks
        try:
            return True, kb.chunks()
        except Exception:
            if not self._reaped(session, kb):
                raise
            return False, session.record.chunks  # counted by the unload, on its way out

    @staticmethod
    def _reaped(session: _Session, kb: KnowledgeBase) -> bool:
        """Whether ``kb`` failed for being unloaded (its store closed) since it was read: the
        idle reaper does not wait for a `list` or a scrape, which never hold a session."""
        if session.kb is not kb:  # unloaded (or reloaded) already: no wait on a reload
            return True
        with session.lock:  # an unload in progress ends first
            return session.kb is not kb

    # -- data plane ------------------------------------------------------------

    def exists(self, session_id: str) -> bool:
        """Whether the session is registered (through any replica); one unregistered
        through another is unloaded here now."""
        if self._store.get(session_id) is not None:
            return True
        self._forget(session_id)
        return False

    def acquire(self, session_id: str) -> tuple[SessionRecord, KnowledgeBase]:
        """The session's knowledge base, loading it (and syncing its folder) if unloaded,
        held until :meth:`release` so that no idle unload closes it mid-call."""
        record = self._store.get(session_id)
        if record is None:  # unregistered, perhaps through another replica
            self._forget(session_id)
            raise KnowhubError(self._unknown(session_id))
        now = time.time()
        self._store.touch(session_id, now)
        with self._lock:
            session = self._local_locked(record)
            session.in_use += 1
            session.record.last_access = now
        try:
            return session.record, self._load(session, None)
        except BaseException:
            self.release(session_id)
            raise

    def release(self, session_id: str) -> None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None:
                session.in_use -= 1
                session.record.last_access = time.time()

    def index_sizes(self) -> list[IndexSize]:
        """The size of every collection of every loaded session."""
        rows = []
        for session in list(self._sessions.values()):
            kb = session.kb
            if kb is None:
                continue
            try:
                collections = kb.reader.collections()
            except Exception:
                if not self._reaped(session, kb):
                    raise
                continue  # unloaded meanwhile: not a loaded session's index any more
            rows += [IndexSize.of(c, session.record.session_id) for c in collections]
        return rows

    def loaded_count(self) -> int:
        return sum(1 for s in self._sessions.values() if s.kb is not None)

    def unload_idle(self) -> list[str]:
        """Unload sessions idle longer than the timeout, and those unregistered through
        another replica; return the ids of the idle ones."""
        self._forget_unregistered()
        if self.idle_timeout_s is None:
            return []
        cutoff = time.time() - self.idle_timeout_s
        with self._lock:
            idle = [
                s
                for s in self._sessions.values()
                if s.kb is not None and not s.in_use and s.record.last_access < cutoff
            ]
        unloaded = [s for s in idle if self._unload(s, only_idle=True)]
        return [s.record.session_id for s in unloaded]

    def close(self) -> None:
        for session in list(self._sessions.values()):
            self._unload(session)
        self._store.close()
        self._embedder_app.close()

    # -- internals -------------------------------------------------------------

    def _load(self, session: _Session, progress: Progress | None) -> KnowledgeBase:
        with session.lock:
            if session.kb is not None:
                return session.kb
            record = session.record
            folder = Path(record.path)
            if not folder.is_dir():
                raise KnowhubError(
                    f"session {record.session_id}: folder {record.path} is gone; "
                    "unregister the session or recreate the folder"
                )
            data_dir = Path(self.settings.data_dir) / "sessions" / record.session_id
            settings = self.settings.model_copy(update={"data_dir": data_dir})
            kb = KnowledgeBase(settings, folder, self._shared_embedder())
            report = kb.ingest([folder], kb.collection, prune=True, progress=progress)
            self.metrics.record_ingest(report)
            log.info(
                "session %s loaded: %d added, %d updated, %d removed, %d unchanged",
                record.session_id,
                len(report.added),
                len(report.updated),
                len(report.removed),
                len(report.unchanged),
            )
            _log_passed_over(record.session_id, report)
            watcher = FolderWatcher(
                folder, lambda: self._resync(session), self.settings.server.watch_debounce_ms
            )
            watcher.start()
            session.kb, session.watcher = kb, watcher
            record.chunks = kb.chunks()
            self._store.set_chunks(record.session_id, record.chunks)
            return kb

    def _resync(self, session: _Session) -> None:
        kb = session.kb
        if kb is not None:
            report = kb.ingest([Path(session.record.path)], kb.collection, prune=True)
            self.metrics.record_ingest(report)
            _log_passed_over(session.record.session_id, report)

    def _unload(self, session: _Session, only_idle: bool = False) -> bool:
        with session.lock:
            # Checked again under the session's lock: a call that acquired the session since
            # it was found idle holds it now (or waits in _load and reloads it afterwards).
            if only_idle and session.in_use:
                return False
            if only_idle:
                log.info("session %s idle: unloading", session.record.session_id)
            if session.watcher is not None:
                session.watcher.stop()
            if session.kb is not None:
                try:
                    session.record.chunks = session.kb.chunks()  # for `list` while unloaded
                    self._store.set_chunks(session.record.session_id, session.record.chunks)
                except (KnowhubError, sqlite3.Error) as exc:  # failing, it must still close
                    log.warning(
                        "session %s: chunks not counted: %s", session.record.session_id, exc
                    )
                session.kb.close()
            session.kb, session.watcher = None, None
            return True

    def _shared_embedder(self) -> Embedder:
        return self._embedder_app.embedder

    def _unknown(self, session_id: str) -> str:
        return f"unknown session {session_id!r}: register the folder first (tool 'register')"

    def _local(self, record: SessionRecord) -> _Session:
        with self._lock:
            return self._local_locked(record)

    def _local_locked(self, record: SessionRecord) -> _Session:
        """This process's handle on the stored ``record`` (under ``self._lock``)."""
        session = self._sessions.get(record.session_id)
        if session is None:
            session = self._sessions[record.session_id] = _Session(replace(record))
        return session

    def _forget(self, session_id: str) -> None:
        """Unload and drop this process's handle on a session no longer registered."""
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is not None:
            log.info("session %s unregistered: unloading it", session_id)
            self._unload(session)
            # Again: a load here may have written the index after the unregistering
            # replica removed it. (Only an id this process had from the store.)
            self._remove_index(session_id)

    def _remove_index(self, session_id: str) -> None:
        """The session's index goes (the folder itself is kept): registering the folder
        again starts afresh, under a new id."""
        shutil.rmtree(Path(self.settings.data_dir) / "sessions" / session_id, ignore_errors=True)

    def _forget_unregistered(self) -> None:
        with self._lock:
            held = list(self._sessions)
        for session_id in held:
            if self._store.get(session_id) is None:
                self._forget(session_id)


def _missing(relative: str, folder: Path, root: Path) -> str:
    """A folder that does not exist, with the nearest names beside it (typos, mostly)."""
    try:
        beside = [p.name for p in folder.parent.iterdir() if p.is_dir()]
    except OSError:  # its parent is missing too, or unreadable
        beside = []
    close = [
        repr(str((folder.parent / name).relative_to(root)))
        for name in difflib.get_close_matches(folder.name, beside, n=3)
    ]
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return (
        f"path {relative!r} does not exist under --path-root {root}{hint}: check the "
        "spelling, or pass create=true to register a new, empty folder"
    )


def _log_passed_over(session_id: str, report: IngestReport) -> None:
    for source, reason in report.failed:
        log.warning("session %s: %s failed: %s", session_id, source, reason)
    notable, more = report.notable_skips()
    for _, reason in notable:
        log.warning("session %s: skipped %s", session_id, reason)
    if more:
        log.warning("session %s: %s", session_id, more)
    if unsupported := report.unsupported_summary():
        log.info("session %s: %s", session_id, unsupported)
