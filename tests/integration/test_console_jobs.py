"""The console's uploads over the real app (in process, through its guard and handlers): a job
is seen by the token that started it and no other, however they are named; a full queue
says when to retry; a FAQ import that fails keeps the files whose entries are in use."""

from __future__ import annotations

import errno
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub import Settings, load_settings, registry
from knowhub.caller import LOCAL_USER
from knowhub.errors import KnowhubError, ProviderError
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import Progress
from knowhub.ingest.uploads import QUEUE_DIR, Held, Queue, QueuedFile, QueuedUpload
from knowhub.interfaces.http import create_app
from knowhub.interfaces.http.console.jobs import MAX_PENDING, FileState, Job, JobBook
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.scope import Scope
from tests.helpers import write
from tests.http_helpers import build_corpus
from tests.mcp_helpers import wait_until

FIRST = "twin-one-Rk3vN8qL2xJ5"
SECOND = "twin-two-Hd7mC4tW9bZ1"
# Two tokens of one name: names are for logs and metrics, nothing makes them unique.
TWINS = [
    {"name": "ops", "token_env": "KH_TEST_TWIN_ONE"},
    {"name": "ops", "token_env": "KH_TEST_TWIN_TWO"},
]
SECRETS = {"KH_TEST_TWIN_ONE": FIRST, "KH_TEST_TWIN_TWO": SECOND}
FROM_PAGE = {"Sec-Fetch-Site": "same-origin"}  # what the console's own pages send
NOTE = b"# Kiln\n\nThe kiln fires at 1200 degrees.\n"


def _settings(data: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": data,
        "embedder.provider": "hashing",
        "embedder.workers": 1,
        **overrides,
    }
    return load_settings(env=SECRETS, overrides=values, cwd=data.parent)


@contextmanager
def _client(settings: Settings, jobs: JobBook | None = None) -> Iterator[TestClient]:
    with TestClient(create_app(settings, jobs=jobs), base_url="http://127.0.0.1") as client:
        yield client


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _upload(client: TestClient, headers: dict[str, str], name: str = "kiln.md") -> Any:
    """A script's upload (it asks for JSON: the job at once)."""
    return client.post(
        "/ui/upload",
        data={"collection": "default"},
        files=[("files", (name, NOTE, "text/markdown"))],
        headers={**FROM_PAGE, "Accept": "application/json", **headers},
    )


def _finished(client: TestClient, url: str, headers: dict[str, str]) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        view: dict[str, Any] = client.get(url, headers=headers).json()
        return view if view["finished"] else None

    found: dict[str, Any] = wait_until(ended, timeout=60, interval=0.05)
    return found


def test_an_upload_job_is_seen_only_by_the_token_that_started_it(tmp_path: Path) -> None:
    with _client(_settings(tmp_path / "data", **{"server.tokens": TWINS})) as client:
        started = _upload(client, _bearer(FIRST))
        assert started.status_code == 202, started.text
        url = started.json()["url"]
        other = client.get(url, headers=_bearer(SECOND))
        assert other.status_code == 404 and "is not yours" in other.text
        view = _finished(client, url, _bearer(FIRST))
        assert [(f["name"], f["state"]) for f in view["files"]] == [("kiln.md", "done")]


def test_a_signed_in_browser_sees_its_token_s_jobs_and_no_others(tmp_path: Path) -> None:
    with _client(_settings(tmp_path / "data", **{"server.tokens": TWINS})) as client:
        signed = client.post(
            "/ui/login", data={"token": FIRST}, headers=FROM_PAGE, follow_redirects=False
        )
        assert signed.status_code == 303 and "knowhub_session" in client.cookies
        started = _upload(client, {})  # by the session cookie
        assert started.status_code == 202, started.text
        url = started.json()["url"]
        # A bearer header wins over the cookie: the other token of that name sees nothing.
        assert client.get(url, headers=_bearer(SECOND)).status_code == 404
        assert client.get(url, headers=_bearer(FIRST)).status_code == 200
        assert _finished(client, url, {})["files"][0]["state"] == "done"


def test_an_open_console_sees_its_own_upload_jobs(tmp_path: Path) -> None:
    with _client(_settings(tmp_path / "data")) as client:
        started = _upload(client, {})
        assert started.status_code == 202, started.text
        assert _finished(client, started.json()["url"], {})["files"][0]["state"] == "done"


@contextmanager
def _queue_full(book: JobBook) -> Iterator[None]:
    """:data:`MAX_PENDING` jobs that wait on the test: the next upload finds the queue full."""
    release = threading.Event()

    def held(progress: Progress) -> IngestReport:
        release.wait(60)
        raise KnowhubError("stopped by the test")

    jobs: list[Job] = []
    try:
        for n in range(MAX_PENDING):
            jobs.append(book.start(LOCAL_USER, "default", [FileState(f"{n}.md", "")], [], held))
        yield
    finally:
        release.set()
        for job in jobs:
            assert job.done.wait(60)


def test_an_upload_past_the_pending_limit_is_503_with_when_to_retry(tmp_path: Path) -> None:
    data = tmp_path / "data"
    book = JobBook()
    with _client(_settings(data), book) as client, _queue_full(book):
        refused = _upload(client, {})
    assert refused.status_code == 503, refused.text
    assert int(refused.headers["Retry-After"]) > 0
    assert "try again later" in refused.text
    assert not any((data / "uploads" / "default").iterdir())  # its file is not kept


class _Flaky(HashingEmbedder):
    """The hashing embedder, except that it cannot embed a question about a meltdown."""

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        if is_query and any("meltdown" in text for text in texts):
            raise ProviderError("the embedder is down: try again once it is back")
        return super()._encode(texts, is_query)


def _faq_import(client: TestClient, files: list[tuple[str, bytes]]) -> Any:
    return client.post(
        "/ui/faq/import",
        data={"collection": "default"},
        files=[("files", (name, body, "text/csv")) for name, body in files],
        headers=FROM_PAGE,
    )


def test_a_failed_faq_import_deletes_only_its_files_not_in_use(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)
    faq = data / "uploads" / "default" / "faq"
    with (
        registry.override("embedder", "flaky", lambda settings: _Flaky()),
        _client(_settings(data, **{"embedder.provider": "flaky"})) as client,
    ):
        earlier = _faq_import(client, [("vpn.csv", b"question,answer\nVPN?,On the intranet.\n")])
        assert earlier.status_code == 200, earlier.text
        failed = _faq_import(
            client,
            [
                ("reset.csv", b"question,answer\nHow do I reset it?,Use the portal.\n"),
                ("reactor.csv", b"question,answer\nWhat if a meltdown starts?,Run.\n"),
            ],
        )
        assert failed.status_code == 502, failed.text
        listed = client.get("/ui/faq", params={"collection": "default"}).text
    # reset.csv was imported before reactor.csv failed: its entries point to its file.
    assert "How do I reset it?" in listed and "VPN?" in listed
    assert sorted(p.name for p in faq.iterdir()) == ["reset.csv", "vpn.csv"]


@pytest.mark.parametrize("body", [b"question,answer\n", b"not,a,faq\n1\n"])
def test_a_faq_file_that_does_not_load_is_not_kept(tmp_path: Path, body: bytes) -> None:
    data = build_corpus(tmp_path)
    with _client(_settings(data)) as client:
        refused = _faq_import(client, [("bad.csv", body)])
        # The file's content is the uploader's to fix (not the server's): 400, by its name.
        assert refused.status_code == 400 and "bad.csv" in refused.text
        assert str(data) not in refused.text and str(data.resolve()) not in refused.text
    assert not any((data / "uploads" / "default" / "faq").iterdir())


def test_a_resumed_upload_writes_only_within_its_uploader_s_data_scope(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)
    uploads = data / "uploads" / "default"
    queue = Queue(data)
    for job, tenant in (("ours", "acme"), ("theirs", "globex")):  # an acme writer's uploads
        write(uploads / f"{job}.md", f"# {job}\n\nThe {job} kiln fires at 1200 degrees.\n")
        files = [QueuedFile(f"{job}.md", f"uploads/default/{job}.md")]
        acme = Scope.of(tenants=["acme"])
        queue.add(QueuedUpload(job, "default", {"tenant": tenant}, files, 0, acme)).release()
    with _client(_settings(data)) as client:  # its start resumes both
        wait_until(lambda: not list((data / QUEUE_DIR).glob("*.json")), timeout=60)
        listed = client.get("/api/documents", params={"collection": "default"}).json()
    sources = {d["source"] for d in listed["documents"]}
    assert "ours.md" in sources
    assert "theirs.md" not in sources and not (uploads / "theirs.md").exists()


def test_the_server_starts_beside_an_upload_record_of_the_wrong_shape(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)
    files = [QueuedFile("a.md", "uploads/default/a.md")]
    raw = QueuedUpload("bad", "default", {}, files).to_dict() | {"tags": []}
    write(data / QUEUE_DIR / "bad.json", json.dumps(raw))
    with _client(_settings(data)) as client:
        assert client.get("/health").status_code == 200
    assert (data / QUEUE_DIR / "bad.json").is_file()  # for verify to report


class _ReadOnlyQueue(Queue):
    """The queue of a data dir mounted read-only since the server started."""

    def add(self, upload: QueuedUpload) -> Held:
        raise OSError(errno.EROFS, "Read-only file system", str(self.folder / f"{upload.id}.tmp"))


def test_an_upload_whose_job_record_cannot_be_written_is_503_naming_the_data_dir(
    tmp_path: Path,
) -> None:
    data = build_corpus(tmp_path)
    with _client(_settings(data), JobBook(_ReadOnlyQueue(data))) as client:
        refused = _upload(client, {})
    assert refused.status_code == 503, refused.text
    assert "server.data_dir" in refused.text and "not writable" in refused.text
    assert str(data) not in refused.text
    assert not any((data / "uploads" / "default").iterdir())  # its file is not kept
