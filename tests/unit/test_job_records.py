"""Upload jobs' records in the store (console/job_records.py): a replica that did not run a
job reports it from its record, to its starter's token only, and as interrupted once the
replica running it stopped, or died and let its lease run out."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.caller import Caller
from knowhub.errors import StoreError
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.interfaces.http.console.job_records import INTERRUPTED, LEASE_S, JobRecords
from knowhub.interfaces.http.console.jobs import KEPT, FileState, JobBook
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.providers.stores.state import ServerState, server_state_of
from tests.helpers import WAIT_S

STARTER = Caller("ops", token_id="starter-token")
TWIN = Caller("ops", token_id="twin-token")  # equal in all it grants, another token


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[ServerState]:
    store = SQLiteStore(tmp_path / DB_NAME)
    yield server_state_of(store)
    store.close()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _held_job(book: JobBook, release: threading.Event, outcome: Exception | None = None) -> str:
    """A job of two files, the first read, held until ``release``; its id."""
    reading = threading.Event()

    def ingest(progress: Progress) -> IngestReport:
        progress(IngestProgress("started", "", 0, 2, 0, 0, 0))
        progress(IngestProgress("file_done", "a.md", 1, 2, 1, 0, 0))
        reading.set()
        release.wait(WAIT_S)
        if outcome is not None:
            raise outcome
        return IngestReport("default", added=["a.md", "b.md"])

    files = [FileState("a.md", "a.md"), FileState("b.md", "b.md")]
    job = book.start(STARTER, "default", files, [], ingest)
    assert reading.wait(WAIT_S)
    return job.id


def test_another_replica_reports_a_running_job_to_its_starter_only(shared: ServerState) -> None:
    here, there, release = JobBook(state=shared), JobBook(state=shared), threading.Event()
    job_id = _held_job(here, release)
    seen = there.view(job_id, STARTER)
    assert seen is not None and not seen["finished"]
    assert [f["state"] for f in seen["files"]] == ["indexed", "reading"]
    assert there.view(job_id, TWIN) is None and there.view("no-such-job", STARTER) is None
    release.set()
    here_job = here.get(job_id, STARTER)
    assert here_job is not None and here_job.done.wait(WAIT_S)
    ended = there.view(job_id, STARTER)
    assert ended is not None and ended["finished"]
    assert [f["state"] for f in ended["files"]] == ["done", "done"]


def test_a_job_whose_lease_ran_out_is_reported_interrupted(shared: ServerState) -> None:
    """Its replica died: nothing renews its lease, and past it another replica says so."""
    here, there, release = JobBook(state=shared), JobBook(state=shared), threading.Event()
    # The replica running it stands still (its renewals, however late, renew from then);
    # the other's clock moves past the lease.
    here.records = JobRecords(shared, KEPT, Clock(1_000_000_000.0))
    clock = Clock(1_000_000_000.0 + LEASE_S / 2)
    there.records = JobRecords(shared, KEPT, clock)
    job_id = _held_job(here, release)
    running = there.view(job_id, STARTER)
    assert running is not None and not running["finished"]
    clock.now += LEASE_S
    lapsed = there.view(job_id, STARTER)
    assert lapsed is not None and lapsed["finished"] and lapsed["error"] == INTERRUPTED
    assert [(f["state"], f["reason"]) for f in lapsed["files"]] == [
        ("indexed", ""),  # written to the store before the end: it stays so
        ("failed", INTERRUPTED),
    ]
    release.set()


def test_a_job_a_stop_cuts_short_is_reported_interrupted_at_once(shared: ServerState) -> None:
    here, there, release = JobBook(state=shared), JobBook(state=shared), threading.Event()
    job_id = _held_job(here, release, StoreError("the store is closed"))
    here.stop()
    release.set()
    job = here.get(job_id, STARTER)
    assert job is not None and job.done.wait(WAIT_S)
    seen = there.view(job_id, STARTER)
    assert seen is not None and seen["finished"] and seen["error"] == INTERRUPTED
