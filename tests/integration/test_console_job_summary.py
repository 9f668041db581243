"""An upload job's view says which files did not go in, counted by type, and says so plainly
when none did (the console's real app, in process)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tests.integration.test_console_jobs import FROM_PAGE, NOTE, _client, _finished, _settings

JSON = {**FROM_PAGE, "Accept": "application/json"}


def _send(client: TestClient, files: list[tuple[str, bytes]]) -> dict[str, object]:
    started = client.post(
        "/ui/upload",
        data={"collection": "default"},
        files=[("files", (name, body, "application/octet-stream")) for name, body in files],
        headers=JSON,
    )
    assert started.status_code == 202, started.text
    return _finished(client, started.json()["url"], JSON)


def test_an_upload_job_counts_the_files_not_ingested_by_type(tmp_path: Path) -> None:
    with _client(_settings(tmp_path / "data")) as client:
        job = _send(
            client,
            [("kiln.md", NOTE), ("a.gif", b"GIF89a"), ("b.gif", b"GIF89a"), ("s.css", b"a{}")],
        )
        assert job["not_ingested_by_type"] == {".gif": 2, ".css": 1}
        assert job["summary"] == "3 of 4 files not ingested (by type: .gif 2, .css 1)"

        job = _send(client, [("a.gif", b"GIF89a"), ("empty.md", b"   \n")])
        assert job["not_ingested_by_type"] == {".gif": 1, ".md": 1}
        none = "nothing ingested: 2 files sent, none went in (by type: .gif 1, .md 1)"
        assert job["summary"] == none
        page = client.post(  # without script: the page waits for the job and shows it
            "/ui/upload",
            data={"collection": "default"},
            files=[("files", ("a.gif", b"GIF89a", "image/gif"))],
            headers=FROM_PAGE,
        )
        assert "nothing ingested: 1 file sent, none went in (by type: .gif 1)" in page.text


def test_an_upload_that_all_went_in_has_no_summary(tmp_path: Path) -> None:
    with _client(_settings(tmp_path / "data")) as client:
        job = _send(client, [("kiln.md", NOTE)])
    assert (job["not_ingested_by_type"], job["summary"]) == ({}, "")
