"""Upload job records read back at a start are not trusted: anyone who can write the data dir
can write one, so a record whose files lie outside its collection's uploads folder (or whose
collection is no collection name) is neither ingested nor allowed to delete anything, and a
record of the wrong shape is logged and reported by verify, never stopping a start."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from knowhub import build_app
from knowhub.caller import Caller
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import Progress
from knowhub.ingest.uploads import QUEUE_DIR, Queue, QueuedFile, QueuedUpload
from knowhub.interfaces.http.console.jobs import FileState, Ingest, JobBook
from tests.helpers import fast_settings, write


def _record(data: Path, raw: Any, job: str = "j1") -> Path:
    path = data / QUEUE_DIR / f"{job}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(raw if isinstance(raw, str) else json.dumps(raw), encoding="utf-8")
    return path


def _good(path: str = "uploads/default/a.md", collection: str = "default") -> dict[str, Any]:
    return QueuedUpload("j1", collection, {"team": "ops"}, [QueuedFile("a.md", path)]).to_dict()


def _failing(seen: list[list[Path]]) -> Any:
    """A resume whose ingest fails every file (a failed file of a job is deleted)."""

    def ingest_for(upload: QueuedUpload, paths: list[Path]) -> Ingest:
        seen.append(paths)
        return lambda progress: IngestReport(
            upload.collection, failed=[(p.name, "not a document") for p in paths]
        )

    return ingest_for


@pytest.mark.parametrize(
    ("collection", "path"),
    [
        ("default", "../victim.db"),
        ("default", "uploads/default/../../../victim.db"),
        ("default", "VICTIM"),  # an absolute path
        ("default", "uploads/default/faq/vpn.csv"),  # an FAQ file, not a document
        ("default", "uploads/default/.upload-0123456789abcdef.part"),  # another upload's
        ("../../evil", "uploads/../../evil/victim.db"),
    ],
)
def test_a_record_whose_files_lie_outside_its_uploads_folder_is_not_run(
    tmp_path: Path, collection: str, path: str
) -> None:
    data = tmp_path / "data"
    victim = write(tmp_path / "victim.db", "precious")
    evil = write(tmp_path / "evil" / "victim.db", "precious")
    faq = write(data / "uploads" / "default" / "faq" / "vpn.csv", "question,answer\n")
    part = write(data / "uploads" / "default" / ".upload-0123456789abcdef.part", "# Half")
    _record(data, _good(path.replace("VICTIM", str(victim)), collection))
    seen: list[list[Path]] = []
    assert JobBook(Queue(data)).resume(_failing(seen)) == []
    assert seen == []
    assert victim.is_file() and evil.is_file() and faq.is_file() and part.is_file()


BAD = [
    "{not json",
    "[]",
    {**_good(), "tags": []},
    {**_good(), "tags": {"team": 1}},
    {**_good(), "tags": {"x\nresumed upload j2": 1}},  # a forged log line
    {**_good(), "files": {"a.md": "uploads/default/a.md"}},
    {**_good(), "files": [{"name": "a.md"}]},
    {**_good(), "attempts": "1"},
    {**_good(), "attempts": True},
    {**_good(), "id": "j1\nresumed upload j2"},  # a forged log line
    {**_good(), "scope": {**_good()["scope"], "max_visibility": "secret"}},
    {**_good(), "scope": {**_good()["scope"], "tenants": "acme"}},
    {key: value for key, value in _good().items() if key != "scope"},
]


@pytest.mark.parametrize("raw", BAD, ids=range(len(BAD)))
def test_a_record_of_the_wrong_shape_is_logged_and_the_others_resumed(
    tmp_path: Path, raw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    write(data / "uploads" / "default" / "a.md", "# A\n\nkept\n")
    bad = _record(data, raw, "bad")
    _record(data, _good(), "j1")
    with caplog.at_level(logging.ERROR, logger="knowhub"):
        held = list(Queue(data).interrupted())
    try:
        assert [h.upload.id for h in held] == ["j1"]
    finally:
        for h in held:
            h.release()
    assert bad.name in caplog.text and "knowhub verify" in caplog.text
    assert "\nresumed upload j2" not in caplog.text
    read, unreadable = Queue(data).records()
    assert [u.id for u in read.values()] == ["j1"] and list(unreadable) == [bad]


def test_verify_reports_a_record_it_cannot_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    app = build_app(fast_settings(data))
    try:
        app.collection("default").ingest([write(tmp_path / "docs" / "b.md", "# B\n\nThe kiln.\n")])
        bad = _record(data, {**_good(), "tags": []}, "bad")
        report = app.verify()
        assert [(p.kind, p.subject) for p in report.problems] == [("bad_upload_record", bad.name)]
        assert str(bad) in report.problems[0].detail and "delete" in report.problems[0].detail
    finally:
        app.close()


def test_a_job_deletes_a_failed_file_only_from_its_uploads_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    outside = write(tmp_path / "elsewhere.md", "# Elsewhere\n")
    inside = write(data / "uploads" / "default" / "inside.md", "# Inside\n")

    def fails(progress: Progress) -> IngestReport:
        return IngestReport("default", failed=[("elsewhere.md", "bad"), ("inside.md", "bad")])

    files = [FileState("elsewhere.md", "elsewhere.md"), FileState("inside.md", "inside.md")]
    stored = {"elsewhere.md": outside, "inside.md": inside}
    job = JobBook(Queue(data)).start(Caller("full"), "default", files, [], fails, stored)
    assert job.done.wait(60)
    assert outside.is_file() and not inside.exists()
