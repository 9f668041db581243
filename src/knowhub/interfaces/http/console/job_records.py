"""Upload jobs' records in the store, so that any replica can say how a job stands.

A job runs on the replica that received its files (they are on that replica's disk); that
replica writes the job's view (what ``GET /ui/upload/{job}`` answers) to the server state
(:mod:`knowhub.providers.stores.state`) as it moves, with a lease: the time until which the
job is known to run. While the job runs, its replica renews the lease every
``LEASE_S / 4`` seconds. Another replica answers from the record; a record whose job never
finished and whose lease has run out is answered as interrupted (its replica stopped or
died: that replica resumes it when it starts again, from its queue on disk).

A record is kept under its starter's token (:attr:`~knowhub.caller.Caller.token_id`), so
only that token finds it; the jobs a start resumes belong to nobody (owner ``""``). Records
live :data:`KEPT_S` after their last change, at most
:data:`~knowhub.interfaces.http.console.jobs.KEPT` of them.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from knowhub.providers.stores.state import Entry, ServerState

__all__ = ["INTERRUPTED", "KEPT_S", "KIND", "LEASE_S", "JobRecords", "Published"]

log = logging.getLogger("knowhub.http")

KIND = "upload-job"
LEASE_S = 60.0
KEPT_S = 86400.0
INTERRUPTED = (
    "the server ingesting this upload stopped before it ended: it resumes the upload when it "
    "starts again (an upload is ingested by the server that received its files)"
)


class Published(Protocol):
    """What a record is written from: a job (:class:`~.jobs.Job`)."""

    id: str
    finished: bool

    def view(self) -> dict[str, Any]: ...


class JobRecords:
    """The jobs' records in ``state``; ``kept``: how many at most."""

    def __init__(
        self, state: ServerState, kept: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.state = state
        self.kept = kept
        self._clock = clock
        self._beating = False
        self._lock = threading.Lock()
        # One write at a time: a view is written in the order it was taken, so a renewal
        # never puts back an older view than the job's last.
        self._writing = threading.Lock()

    def publish(self, job: Published, owner: str) -> None:
        """Write ``job``'s view (with a fresh lease while it runs). A store that fails here
        is logged, never raised: the ingest goes on, and this replica still answers."""
        try:
            with self._writing:
                now = self._clock()
                value = json.dumps({"view": job.view(), "lease_until": now + LEASE_S})
                self.state.update(KIND, owner, job.id, lambda _: Entry(value, 1), now, KEPT_S)
        except Exception as exc:  # the store's trouble must not end the ingest
            log.warning("upload %s: its record could not be written: %s", job.id, exc)

    def started(self, job: Published, owner: str) -> None:
        """Write a new job's first record, and keep to :attr:`kept` records."""
        self.publish(job, owner)
        try:
            self.state.trim(KIND, self._clock(), self.kept)
        except Exception as exc:  # as in publish: an old record outlives its bound, no more
            log.warning("upload records could not be trimmed: %s", exc)

    def view(self, job_id: str, owner: str) -> dict[str, Any] | None:
        """The recorded view of ``owner``'s job ``job_id`` (None: none such, or not theirs),
        answered as interrupted once its lease ran out unfinished."""
        now = self._clock()
        found = self.state.get(KIND, owner, job_id, now)
        if found is None:
            return None
        record = json.loads(found)
        view: dict[str, Any] = record["view"]
        if view["finished"] or record["lease_until"] > now:
            return view
        for f in view["files"]:
            if f["state"] not in ("indexed", "done", "unchanged", "failed"):  # not written
                f["state"], f["reason"], f["fraction"] = "failed", INTERRUPTED, 1.0
        return {**view, "finished": True, "error": INTERRUPTED}

    def keep_alive(
        self, running: Callable[[], Iterable[tuple[Published, str]]], stop: threading.Event
    ) -> None:
        """Renew the leases of the ``running`` jobs every ``LEASE_S / 4`` s until ``stop``
        (one thread per book, started by its first job)."""
        with self._lock:
            if self._beating:
                return
            self._beating = True

        def beat() -> None:
            while not stop.wait(LEASE_S / 4):
                for job, owner in running():
                    self.publish(job, owner)

        threading.Thread(target=beat, name="knowhub-upload-leases", daemon=True).start()
