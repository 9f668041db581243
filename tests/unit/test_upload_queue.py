"""The upload queue on disk: a job's record is written before it runs and deleted when its
ingest ends; a stop keeps it (and the job's files) for the next start, which resumes it, at
most :data:`MAX_ATTEMPTS` times."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import IO

import pytest

from knowhub.caller import Caller
from knowhub.errors import StoreError
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import Progress
from knowhub.ingest.uploads import Queue, QueuedFile, QueuedUpload, _open, held_elsewhere
from knowhub.interfaces.http.console.jobs import MAX_ATTEMPTS, FileState, Ingest, JobBook
from knowhub.scope import Scope
from tests.helpers import write

ACME, TAGS = Scope.of(tenants=["acme"]), {"tenant": "acme"}


def _stored(data: Path) -> Path:
    return write(data / "uploads" / "default" / "a.md", "# A\n\nkept\n")


def test_a_job_s_record_is_held_while_it_runs_and_gone_when_it_ends(tmp_path: Path) -> None:
    book, ran = JobBook(Queue(tmp_path)), threading.Event()
    path = _stored(tmp_path)

    def ingest(progress: Progress) -> IngestReport:
        (record,) = (tmp_path / "upload-jobs").glob("*.json")
        assert held_elsewhere(record)  # another process would not resume it
        ran.set()
        return IngestReport("default", added=["a.md"])

    job = book.start(
        Caller("full"), "default", [FileState("a.md", "a.md")], [], ingest, {"a.md": path}
    )
    assert job.done.wait(60) and ran.is_set()
    assert not list((tmp_path / "upload-jobs").glob("*.json")) and path.is_file()


def test_a_job_a_stop_cuts_short_keeps_its_files_and_record_for_the_next_start(
    tmp_path: Path,
) -> None:
    book, started, release = JobBook(Queue(tmp_path)), threading.Event(), threading.Event()
    path = _stored(tmp_path)

    def closed_under_it(progress: Progress) -> IngestReport:
        started.set()
        release.wait(60)
        raise StoreError("the store is closed")  # what the App closing at shutdown does

    files, scope = [FileState("a.md", "a.md")], Scope.of(tenants=["acme"], roles=["hr"])
    job = book.start(
        Caller("acme-hr"),
        "default",
        files,
        [],
        closed_under_it,
        {"a.md": path},
        {"team": "ops"},
        scope,
    )
    assert started.wait(60)
    book.stop()
    release.set()
    assert job.done.wait(60)
    assert path.is_file()  # not deleted as a failed file
    seen: list[tuple[str, dict[str, str], Scope, list[Path]]] = []

    def again(upload: QueuedUpload, paths: list[Path]) -> Ingest:
        seen.append((upload.collection, upload.tags, upload.scope, paths))
        return lambda progress: IngestReport("default", added=["a.md"])

    (resumed,) = JobBook(Queue(tmp_path)).resume(again)  # the next start
    assert resumed.done.wait(60) and [f.name for f in resumed.files] == ["a.md"]
    # As the uploader: a writer with a data scope writes only within it, resumed or not.
    assert seen == [("default", {"team": "ops"}, scope, [path])]
    assert not list((tmp_path / "upload-jobs").glob("*.json"))


def _cut_short(book: JobBook) -> Ingest:
    """An ingest the server's stop cuts short (the App closing under it)."""

    def ingest(progress: Progress) -> IngestReport:
        book.stop()
        raise StoreError("the store is closed")

    return ingest


def test_an_upload_cut_short_three_times_is_given_up_and_kept_for_verify(tmp_path: Path) -> None:
    path = _stored(tmp_path)
    book = JobBook(Queue(tmp_path))
    files = [FileState("a.md", "a.md")]
    first = book.start(
        Caller("full"), "default", files, [], _cut_short(book), {"a.md": path}, TAGS, ACME
    )
    runs = [first]
    while runs[-1].done.wait(60) and len(runs) < MAX_ATTEMPTS:  # starts resume it, stopped too
        book = JobBook(Queue(tmp_path))
        (resumed,) = book.resume(lambda upload, paths, book=book: _cut_short(book))
        runs.append(resumed)
    assert len(runs) == MAX_ATTEMPTS == 3 and runs[-1].done.wait(60)

    def never(upload: QueuedUpload, paths: list[Path]) -> Ingest:
        raise AssertionError("not resumed a fourth time")

    assert JobBook(Queue(tmp_path)).resume(never) == []
    assert JobBook(Queue(tmp_path)).resume(never) == []  # nor at any later start
    (upload,) = Queue(tmp_path).records()[0].values()
    # Kept, with its tags and uploader's scope, for verify to report and --fix to ingest.
    assert upload.given_up and upload.tags == TAGS and upload.scope == ACME
    assert path.is_file()


def test_a_record_whose_files_are_all_gone_is_deleted_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = [QueuedFile("a.md", "uploads/default/a.md")]
    Queue(tmp_path).add(QueuedUpload("j1", "default", {}, files, 1)).release()

    def never(upload: QueuedUpload, paths: list[Path]) -> Ingest:
        raise AssertionError("nothing to resume")

    with caplog.at_level(logging.WARNING, logger="knowhub"):
        assert JobBook(Queue(tmp_path)).resume(never) == []
    assert not list((tmp_path / "upload-jobs").glob("*.json"))
    assert "upload j1: none of its files is left: its record is deleted" in caplog.text


def _two_servers(data: Path) -> tuple[Queue, Queue, Path, IO[str]]:
    """Two servers' queues on one data dir, and a record the first has opened, not locked."""
    _stored(data)
    files = [QueuedFile("a.md", "uploads/default/a.md")]
    Queue(data).add(QueuedUpload("j1", "default", {}, files, 1)).release()
    record = data / "upload-jobs" / "j1.json"
    opened = _open(record)
    assert opened is not None
    return Queue(data), Queue(data), record, opened


def test_a_record_whose_ingest_ends_while_another_server_opens_it_is_not_run_again(
    tmp_path: Path,
) -> None:
    # A opens the record, B takes it, runs it and deletes it, and only then does A lock it
    # (the lock of a deleted file, which nobody holds).
    first, second, record, opened = _two_servers(tmp_path)
    (taken,) = second.interrupted()
    taken.done()
    assert first._take(record, opened) is None
    assert opened.closed


def test_a_record_taken_after_another_server_ran_it_reads_that_run_s_attempts(
    tmp_path: Path,
) -> None:
    first, second, record, opened = _two_servers(tmp_path)
    (taken,) = second.interrupted()
    second.rewrite(taken, replace(taken.upload, attempts=2))
    taken.release()  # B was stopped too
    held = first._take(record, opened)
    assert held is not None
    try:
        assert held.upload.attempts == 2
    finally:
        held.release()


def _open_files() -> int:
    return len(list(Path("/proc/self/fd").iterdir()))


def test_a_record_that_cannot_take_its_name_leaves_nothing_open_or_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "upload-jobs" / "j1.json").mkdir(parents=True)  # renaming over it fails
    files = [QueuedFile("a.md", "uploads/default/a.md")]
    before = _open_files()
    with pytest.raises(IsADirectoryError):
        Queue(tmp_path).add(QueuedUpload("j1", "default", {}, files))
    assert _open_files() == before  # its locked handle closed, not left to the collector
    assert [p.name for p in (tmp_path / "upload-jobs").iterdir()] == ["j1.json"]
