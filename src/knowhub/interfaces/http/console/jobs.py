"""An upload's ingest as a job the page can watch: one thread runs ``App.ingest`` over the
uploaded files, and the pipeline's progress events (:mod:`knowhub.ingest.progress`) move
each file through ``queued → reading → embedding → indexed → done | failed``.

Ingest reports chunks encoded for the whole run, not per file, so a file in ``embedding``
shows the run's encoded share; every file's final state and failure reason come from the
run's :class:`~knowhub.ingest.pipeline.IngestReport`. Jobs are kept in memory (the last
:data:`KEPT` of them) and shown only to the token that started them: its
:class:`~knowhub.interfaces.security.Principal` object itself, not its name (two tokens may
share a name). The token book makes one principal per token, and a console session stands
for that same object, so a token's header and its browser's session see one job, and no
other token does. Past :data:`MAX_PENDING` jobs an upload is refused with 503 and
``Retry-After`` (:class:`~knowhub.interfaces.http.limits.ServerBusyError`).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from knowhub.errors import KnowhubError
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.ingest.report import count_by_type, types_text
from knowhub.interfaces.http.limits import ServerBusyError
from knowhub.interfaces.security import Principal

__all__ = ["KEPT", "MAX_PENDING", "RETRY_AFTER_S", "FileState", "Job", "JobBook"]

log = logging.getLogger("knowhub.http")

KEPT = 200
MAX_PENDING = 8  # jobs waiting or running; more uploads are refused until some end
RETRY_AFTER_S = 30  # what a refused upload is told to wait: an ingest takes seconds to minutes
State = Literal["queued", "reading", "embedding", "indexed", "done", "unchanged", "failed"]
_SHARE: dict[str, float] = {"queued": 0.0, "reading": 0.1, "indexed": 0.95}
Ingest = Callable[[Progress], IngestReport]


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
    owner: Principal  # compared by identity: see the module's docstring
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

    def run(self, ingest: Ingest, turn: threading.Semaphore) -> None:
        """``ingest(progress)`` with this job's progress callback, once ``turn`` lets it (one
        upload ingests at a time); the report settles every file. Any error ends the job
        (shown on the page), never the server."""
        try:
            with turn:
                report = ingest(self._progress)
            self._settle(report)
        except KnowhubError as exc:
            self._fail_all(str(exc))
        except Exception as exc:  # a bug: logged in full, shown on the page, server kept
            log.error("upload ingest failed", exc_info=exc)
            self._fail_all(f"ingest failed: {type(exc).__name__}: {exc}")
        finally:
            for f in self.files:
                if f.state == "failed" and f.source in self.stored:
                    self.stored[f.source].unlink(missing_ok=True)
            self.finished = True
            self.done.set()

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
        failed = dict(report.failed) | {s: f"skipped: {r}" for s, r in report.skipped}
        for f in self.files:
            if f.source in failed:
                f.state, f.reason, f.fraction = "failed", failed[f.source], 1.0
            elif f.source in report.unchanged:
                f.state, f.fraction = "unchanged", 1.0
                f.reason = "already indexed with the same bytes and tags"
            else:
                f.state, f.fraction = "done", 1.0

    def _fail_all(self, reason: str) -> None:
        self.error = reason
        for f in self.files:
            if f.state != "done":
                f.state, f.reason, f.fraction = "failed", reason, 1.0


class JobBook:
    """The server's recent upload jobs, by id (the oldest forgotten past :data:`KEPT`)."""

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._turn = threading.Semaphore(1)

    def start(
        self,
        owner: Principal,
        collection: str,
        files: list[FileState],
        refused: list[FileState],
        ingest: Ingest,
        stored: Mapping[str, Path] | None = None,
    ) -> Job:
        """A new job, its ingest started in its own thread (it waits its turn there).

        Raises:
            ServerBusyError: :data:`MAX_PENDING` jobs are waiting or running already (the files
                of ``stored`` are deleted: nothing will ingest them).
        """
        job = Job(secrets.token_urlsafe(12), owner, collection, files, refused, stored=stored or {})
        with self._lock:
            pending = sum(not j.finished for j in self._jobs.values())
            if files and pending >= MAX_PENDING:
                for path in job.stored.values():
                    path.unlink(missing_ok=True)
                raise ServerBusyError(
                    f"{pending} uploads are waiting or being ingested already (at most "
                    f"{MAX_PENDING}): try again later, in {RETRY_AFTER_S} s or so",
                    RETRY_AFTER_S,
                )
            self._jobs[job.id] = job
            while len(self._jobs) > KEPT:
                self._jobs.popitem(last=False)
        if files:
            name = f"knowhub-upload-{job.id}"
            run = threading.Thread(
                target=job.run, args=(ingest, self._turn), name=name, daemon=True
            )
            run.start()
        else:  # every file was refused: nothing to ingest
            job.finished = True
            job.done.set()
        return job

    def get(self, job_id: str, owner: Principal) -> Job | None:
        """The job, if it exists and ``owner`` started it (else None: one answer for both)."""
        with self._lock:
            job = self._jobs.get(job_id)
        # ``is``, not ``==``: principals are values, and two tokens' may be equal field by field.
        return job if job is not None and job.owner is owner else None
