"""An upload's ingest as a job the page can watch: one thread runs ``Collection.ingest``
over the uploaded files, and the pipeline's progress events (:mod:`knowhub.ingest.progress`)
move each file through ``queued → reading → embedding → indexed → done | failed``.

Ingest reports chunks encoded for the whole run, not per file, so a file in ``embedding``
shows the run's encoded share; every file's final state and failure reason come from the
run's :class:`~knowhub.ingest.pipeline.IngestReport`. A job runs in the process that
received its files (they are on its disk), which keeps it in memory (the last :data:`KEPT`)
and shows it only to the token that started it: its :class:`~knowhub.interfaces.security.
Caller` object itself, not its name (two tokens may share a name). The token book makes one
principal per token, and a console session stands for that same object, so a token's header
and its browser's session see one job, and no other token does. Its record in the store
(:mod:`.job_records`) tells other replicas how it stands, under the starter's token (its
:attr:`~knowhub.caller.Caller.token_id`). Past :data:`MAX_PENDING` jobs (in this process) an
upload is refused with 503 and ``Retry-After``
(:class:`~knowhub.interfaces.http.limits.ServerBusyError`).

A job is also queued on disk (:class:`~knowhub.ingest.uploads.Queue`) before the upload is
answered, and its record deleted only once its ingest has ended: a server stopped or killed
meanwhile resumes it at its next start (:meth:`JobBook.resume`), and a job that a stop cuts
short keeps its files and its record rather than failing them (its view says so). A
failure's reason names each file as it was sent, never by the server's path.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from knowhub.caller import Caller
from knowhub.errors import KnowhubError
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.ingest.report import count_by_type, types_text
from knowhub.ingest.uploads import Held, Queue, QueuedFile, QueuedUpload, uploads_folder
from knowhub.interfaces.http.console.job_records import INTERRUPTED, JobRecords
from knowhub.interfaces.http.console.uploads import Received, as_sent, storage_error
from knowhub.interfaces.http.limits import ServerBusyError
from knowhub.providers.stores.state import MemoryState, ServerState
from knowhub.scope import UNRESTRICTED, Scope

__all__ = [
    "KEPT",
    "MAX_ATTEMPTS",
    "MAX_PENDING",
    "RETRY_AFTER_S",
    "FileState",
    "Ingest",
    "Job",
    "JobBook",
    "Resume",
]

log = logging.getLogger("knowhub.http")

KEPT = 200
MAX_PENDING = 8  # jobs waiting or running; more uploads are refused until some end
RETRY_AFTER_S = 30  # what a refused upload is told to wait: an ingest takes seconds to minutes
# Runs of one upload, its first included: one cut short that often (a file of it may stop
# the server) is given up, for verify to report and ``verify --fix`` to ingest.
MAX_ATTEMPTS = 3
State = Literal["queued", "reading", "embedding", "indexed", "done", "unchanged", "failed"]
_SHARE: dict[str, float] = {"queued": 0.0, "reading": 0.1, "indexed": 0.95}
Ingest = Callable[[Progress], IngestReport]
Resume = Callable[[QueuedUpload, list[Path]], Ingest]
"""The ingest of a queued upload's files (those still there): what a start resumes it with."""
# Owns the jobs a start resumes: no token's principal is this object, so none is shown them.
_NOBODY = Caller("resumed upload")


@dataclass
class FileState:
    """One file of a job, as its bar shows it."""

    name: str  # as it was sent
    source: str  # as it is stored and cited (its file name under the uploads folder)
    state: State = "queued"
    reason: str = ""
    fraction: float = 0.0


@dataclass
class Job:
    """One upload's ingest; its state is read while its thread writes it (whole-value
    assignments only, so a reader sees each field old or new, never torn)."""

    id: str
    owner: Caller  # compared by identity: see the module's docstring
    collection: str
    files: list[FileState]
    refused: list[FileState] = field(default_factory=list)
    finished: bool = False
    error: str = ""
    started: float = field(default_factory=time.time)
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    # Where each file (by source) was stored: a file that fails to ingest is deleted, since
    # no document points to it and nothing else would ever remove it.
    stored: Mapping[str, Path] = field(default_factory=dict, repr=False)
    held: Held | None = field(default=None, repr=False)  # its record on disk, locked
    # The collection's uploads folder: no file elsewhere is ever deleted (None: a book with
    # no queue on disk, whose files are only those the receiver stored).
    folder: Path | None = field(default=None, repr=False)
    # Writes the job's record for other replicas (None: nothing to tell them).
    publish: Callable[[Job], None] | None = field(default=None, repr=False)
    _told: tuple[float, tuple[str, ...]] = field(default=(0.0, ()), repr=False)

    def view(self) -> dict[str, Any]:
        """What ``GET /ui/upload/{job}`` answers."""
        failed = [f.name for f in self.files + self.refused if f.state == "failed"]
        return {
            "id": self.id,
            "collection": self.collection,
            "finished": self.finished,
            "error": self.error,
            "files": [asdict(f) for f in self.files + self.refused],
            "not_ingested_by_type": count_by_type(failed),
            "summary": self._summary(failed),
        }

    def _summary(self, failed: list[str]) -> str:
        """Once the job is over, how many files did not go in, by type ('' when all did);
        said first when none did, which a page of red rows leaves the reader to count."""
        if not self.finished or not failed:
            return ""
        sent = len(self.files) + len(self.refused)
        by_type = f"(by type: {types_text(count_by_type(failed))})"
        if len(failed) < sent:
            return f"{len(failed)} of {sent} files not ingested {by_type}"
        files = f"{sent} file{'s' if sent > 1 else ''}"
        return f"nothing ingested: {files} sent, none went in {by_type}"

    def run(
        self, ingest: Ingest, turn: AbstractContextManager[Any], stopping: threading.Event
    ) -> None:
        """``ingest(progress)`` with this job's progress callback, once ``turn`` lets it (one
        change of the knowledge base at a time); the report settles every file. Any error
        ends the job (shown on the page), never the server; once ``stopping`` is set (the
        server stops), an unsettled job keeps its files and record for the next start
        instead."""
        settled = False
        try:
            with turn:
                report = None if stopping.is_set() else ingest(self._progress)
            if report is not None:
                self._settle(report)
                settled = True
        except KnowhubError as exc:
            if not stopping.is_set():
                self._fail_all(str(exc))
                settled = True
        except Exception as exc:  # a bug: logged in full, shown on the page, server kept
            if not stopping.is_set():
                log.error("upload ingest failed", exc_info=exc)
                self._fail_all(f"ingest failed: {type(exc).__name__}: {exc}")
                settled = True
        finally:
            self._end(settled)

    def _end(self, settled: bool) -> None:
        if settled:
            for f in self.files:
                if f.state == "failed" and f.source in self.stored:
                    self._delete(self.stored[f.source])
        if self.held is not None:
            if settled:
                self.held.done()
            else:  # cut short by a stop: the next start resumes it
                self.held.release()
        if not settled:
            self.error = INTERRUPTED
        self.finished = True
        self._tell(force=True)
        self.done.set()

    def _tell(self, force: bool = False) -> None:
        """Publish the job's view when a file changed state, else at most once a second."""
        states, now = tuple(f.state for f in self.files), time.monotonic()
        if self.publish is None or not (
            force or states != self._told[1] or now - self._told[0] >= 1
        ):
            return
        self._told = (now, states)
        self.publish(self)

    def _delete(self, path: Path) -> None:
        """Delete a stored file that failed, if it is a file of this job's uploads folder."""
        if self.folder is None or path.resolve().parent == self.folder.resolve():
            path.unlink(missing_ok=True)
        else:
            log.error("upload %s: not deleting %s: it is not in %s", self.id, path, self.folder)

    def _progress(self, step: IngestProgress) -> None:
        by_source = {f.source: f for f in self.files}
        if step.event == "started":
            for f in self.files:
                self._move(f, "reading")
        elif step.event == "page_read" and step.source in by_source:
            self._read_page(by_source[step.source], step.page, step.pages)
        elif step.event == "chunked" and step.source in by_source:
            by_source[step.source].reason = ""
            self._move(by_source[step.source], "embedding")
        elif step.event == "file_done" and step.source in by_source:
            self._move(by_source[step.source], "indexed")
        share = step.chunks_done / step.chunks_total if step.chunks_total else 0.0
        for f in self.files:
            if f.state == "embedding":  # never back below what its scan's pages moved it
                f.fraction = max(f.fraction, round(0.1 + 0.85 * share, 3))
        self._tell()

    @staticmethod
    def _read_page(f: FileState, page: int, pages: int) -> None:
        """A scan's pages move its bar from reading (0.1) up to half way: OCR is most of
        the time such a file takes."""
        f.state, f.reason = "reading", f"OCR page {page}/{pages}"
        f.fraction = round(0.1 + 0.4 * page / max(pages, 1), 3)

    def _move(self, f: FileState, state: State) -> None:
        f.state = state
        f.fraction = _SHARE.get(state, f.fraction)

    def _settle(self, report: IngestReport) -> None:
        failed = report.not_ingested()
        for f in self.files:
            if f.source in failed:
                f.state, f.reason, f.fraction = "failed", self._named(failed[f.source]), 1.0
            elif f.source in report.unchanged:
                f.state, f.fraction = "unchanged", 1.0
                f.reason = "already indexed with the same bytes and tags"
            else:
                f.state, f.fraction = "done", 1.0

    def _fail_all(self, reason: str) -> None:
        self.error = reason = self._named(reason)
        for f in self.files:
            if f.state != "done":
                f.state, f.reason, f.fraction = "failed", reason, 1.0

    def _named(self, reason: str) -> str:
        """``reason`` naming each file as it was sent, not by its path on this server."""
        sent = [
            Received(f.name, self.stored[f.source], 0)
            for f in self.files
            if f.source in self.stored
        ]
        return as_sent(reason, sent)


class JobBook:
    """The server's recent upload jobs, by id (the oldest forgotten past :data:`KEPT`),
    their queue on disk (none in tests of the jobs alone) and their records in ``state``
    (the store's, for other replicas: :mod:`.job_records`; none: this process's memory)."""

    def __init__(self, queue: Queue | None = None, state: ServerState | None = None) -> None:
        self.queue = queue
        self.records = JobRecords(state if state is not None else MemoryState(), KEPT)
        self.stopping = threading.Event()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        # Whose turn it is to change the knowledge base: a server's runtime's
        # (``Runtime.writing``: its other changes, a re-ingest or an FAQ import, wait too);
        # the jobs' own for a book tested alone.
        self.turn: AbstractContextManager[Any] = threading.RLock()

    def start(
        self,
        owner: Caller,
        collection: str,
        files: list[FileState],
        refused: list[FileState],
        ingest: Ingest,
        stored: Mapping[str, Path] | None = None,
        tags: Mapping[str, str] | None = None,
        scope: Scope = UNRESTRICTED,
    ) -> Job:
        """A new job, queued on disk, its ingest started in its own thread (it waits its
        turn there).

        Raises:
            ServerBusyError: :data:`MAX_PENDING` jobs are waiting or running already.
            InsufficientStorageError: its record could not be written (a full disk).
            DataDirNotWritableError: nor could it there (a read-only data dir).
            Either way the files of ``stored`` are deleted: nothing will ingest them.
        """
        job = Job(secrets.token_urlsafe(12), owner, collection, files, refused, stored=stored or {})
        job.folder = self._folder(collection)
        with self._lock:
            pending = sum(not j.finished for j in self._jobs.values())
            if files and pending >= MAX_PENDING:
                _forget(job)
                raise ServerBusyError(
                    f"{pending} uploads are waiting or being ingested already (at most "
                    f"{MAX_PENDING}): try again later, in {RETRY_AFTER_S} s or so",
                    RETRY_AFTER_S,
                )
            self._add(job)
        if not files:  # every file was refused: nothing to ingest
            job.finished = True
            job.done.set()
            self.records.started(job, _owner(owner))
            return job
        try:
            job.held = self._queued(job, dict(tags or {}), scope)
        except OSError as exc:
            with self._lock:
                self._jobs.pop(job.id, None)
            _forget(job)
            answer = storage_error(exc, "the upload's job record")
            if answer is None:
                raise
            raise answer from exc
        self._run(job, ingest)
        return job

    def resume(self, ingest_for: Resume) -> list[Job]:
        """A job for each queued upload no process runs (a stop cut its ingest short)."""
        if self.queue is None:
            return []
        resumed = [self._resume(held, ingest_for) for held in self.queue.interrupted()]
        return [job for job in resumed if job is not None]

    def _resume(self, held: Held, ingest_for: Resume) -> Job | None:
        assert self.queue is not None
        upload = held.upload
        paths = [p for p in upload.paths(self.queue.data_dir) if p.is_file()]
        if not paths:
            log.warning("upload %s: none of its files is left: its record is deleted", upload.id)
            held.done()
            return None
        if upload.given_up or upload.attempts >= MAX_ATTEMPTS:
            log.error(
                "upload %s was cut short %d times: not resumed again (`knowhub verify` lists "
                "its files; `knowhub verify --fix` ingests them with its tags, as its uploader)",
                upload.id,
                upload.attempts,
            )
            if not upload.given_up:
                self.queue.rewrite(held, replace(upload, given_up=True))
            held.release()
            return None
        self.queue.rewrite(held, replace(upload, attempts=upload.attempts + 1))
        sent = {Path(f.path).name: f.name for f in upload.files}
        files = [FileState(sent.get(p.name, p.name), p.name) for p in paths]
        job = Job(upload.id, _NOBODY, upload.collection, files, held=held)
        job.folder = self._folder(upload.collection)
        job.stored = {p.name: p for p in paths}
        with self._lock:
            self._add(job)
        log.warning("resuming upload %s: %d files into %s", job.id, len(paths), job.collection)
        self._run(job, ingest_for(upload, paths))
        return job

    def stop(self) -> None:
        """The server stops: jobs cut short from now on keep their files and records."""
        self.stopping.set()

    def get(self, job_id: str, owner: Caller) -> Job | None:
        """The job, if it runs here and ``owner`` started it (else None: one answer for
        both)."""
        with self._lock:
            job = self._jobs.get(job_id)
        # ``is``, not ``==``: principals are values, and two tokens' may be equal field by field.
        return job if job is not None and job.owner is owner else None

    def view(self, job_id: str, owner: Caller) -> dict[str, Any] | None:
        """How ``owner``'s job stands: from this process if it runs here, else from its
        record (another replica's job); None when there is none such for ``owner``."""
        job = self.get(job_id, owner)
        return job.view() if job is not None else self.records.view(job_id, _owner(owner))

    def _add(self, job: Job) -> None:
        self._jobs[job.id] = job
        while len(self._jobs) > KEPT:
            self._jobs.popitem(last=False)

    def _folder(self, collection: str) -> Path | None:
        return None if self.queue is None else uploads_folder(self.queue.data_dir, collection)

    def _queued(self, job: Job, tags: dict[str, str], scope: Scope) -> Held | None:
        if self.queue is None:
            return None
        data_dir = self.queue.data_dir
        files = [
            QueuedFile(f.name, str(_within(job.stored[f.source], data_dir)))
            for f in job.files
            if f.source in job.stored
        ]
        return self.queue.add(QueuedUpload(job.id, job.collection, tags, files, 1, scope))

    def _run(self, job: Job, ingest: Ingest) -> None:
        owner = _owner(job.owner)
        job.publish = lambda j: self.records.publish(j, owner)
        self.records.started(job, owner)
        self.records.keep_alive(self._running, self.stopping)
        run = threading.Thread(
            target=job.run,
            args=(ingest, self.turn, self.stopping),
            name=f"knowhub-upload-{job.id}",
            daemon=True,
        )
        run.start()

    def _running(self) -> list[tuple[Job, str]]:
        """The jobs running here, with their records' owners (for their leases)."""
        with self._lock:
            jobs = [j for j in self._jobs.values() if not j.finished]
        return [(j, _owner(j.owner)) for j in jobs]


def _owner(caller: Caller) -> str:
    """Whose a job's record is: its token's (the open console's caller has none, and is
    everyone); nobody's ("") for a resumed job."""
    return "" if caller is _NOBODY else caller.token_id or f"local:{caller.name}"


def _forget(job: Job) -> None:
    """Delete a refused job's files: nothing will ingest them."""
    for path in job.stored.values():
        path.unlink(missing_ok=True)


def _within(path: Path, data_dir: Path) -> Path:
    """``path`` relative to the data dir (so a moved data dir still finds it), if under it."""
    return path.relative_to(data_dir) if path.is_relative_to(data_dir) else path
