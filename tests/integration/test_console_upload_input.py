"""Bad input to the console and the API over the real app (in process, through its guard and
error handlers): names in every script are kept, malformed bodies are 400 not 500, a body over
its limit names that limit, a WebSocket message too deeply nested is answered."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub import Settings
from knowhub.interfaces.http import create_app
from tests.helpers import fast_settings
from tests.http_helpers import build_corpus
from tests.mcp_helpers import wait_until
from tests.upload_helpers import (
    BOUNDARY,
    FROM_PAGE,
    SCRIPT,
    content_type,
    disposition,
    form,
    multipart,
)

NAMES = {
    "报销制度.md": "# 报销\n\n差旅报销需要在三十天内提交发票。\n",
    "Отчёт.md": "# Отчёт\n\nКвартальный отчёт сдаётся в пятницу.\n",
    "café.md": "# Café\n\nThe espresso machine descales on Mondays.\n",
    "😀 notes.md": "# Notes\n\nThe zeppelin hangar opens at dawn.\n",
}


@contextmanager
def _client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


def _finished(client: TestClient, url: str) -> dict[str, Any]:
    def ended() -> dict[str, Any] | None:
        view: dict[str, Any] = client.get(url).json()
        return view if view["finished"] else None

    found: dict[str, Any] = wait_until(ended, timeout=60, interval=0.05)
    return found


def test_uploads_named_in_every_script_are_stored_and_cited_under_their_names(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with _client(fast_settings(data)) as client:
        files = [(name, text.encode()) for name, text in NAMES.items()]
        started = client.post(
            "/ui/upload", content=form(files), headers={**SCRIPT, **content_type()}
        )
        assert started.status_code == 202, started.text
        view = _finished(client, started.json()["url"])
        assert [(f["name"], f["source"], f["state"]) for f in view["files"]] == [
            (name, name, "done") for name in NAMES
        ]
        listed = client.get("/api/documents", params={"collection": "default"}).json()
        assert sorted(d["source"] for d in listed["documents"]) == sorted(NAMES)
        hits = client.post("/api/search", json={"query": "zeppelin hangar"}).json()["hits"]
        assert hits[0]["source"] == "😀 notes.md"
    assert sorted(p.name for p in (data / "uploads" / "default").iterdir()) == sorted(NAMES)


@pytest.mark.parametrize(
    ("body", "boundary"),
    [
        (
            multipart([(disposition("files", "a.md") + b"\r\nX-Pad: " + b"p" * 100_000, b"x")]),
            BOUNDARY,
        ),
        (b"--" + BOUNDARY.encode() + b"\r\nnot a header\r\n\r\n", BOUNDARY),
        (form([("a.md", b"# A\n")]), "x" * 500),
        (b"no parts at all", BOUNDARY),
    ],
)
def test_a_malformed_upload_is_400_not_500(tmp_path: Path, body: bytes, boundary: str) -> None:
    with _client(fast_settings(tmp_path / "data")) as client:
        for path in ("/ui/upload", "/ui/faq/import"):
            refused = client.post(path, content=body, headers={**SCRIPT, **content_type(boundary)})
            assert refused.status_code == 400, (path, refused.text)
            assert "multipart/form-data" in refused.text


def test_a_nul_in_a_faq_source_is_400(tmp_path: Path) -> None:
    with _client(fast_settings(build_corpus(tmp_path))) as client:
        refused = client.post(
            "/ui/faq/remove",
            data={"collection": "default", "source": "a\x00b.csv"},
            headers=FROM_PAGE,
        )
    assert refused.status_code == 400, refused.text
    assert "source" in refused.text


def test_an_upload_over_the_body_limit_names_that_limit(tmp_path: Path) -> None:
    limits = {"server.max_upload_bytes": 3_000, "server.max_upload_body_bytes": 10_000}
    data = tmp_path / "data"
    with _client(fast_settings(data, **limits)) as client:
        many = form([(f"{n}.md", b"x" * 2_500) for n in range(6)])
        refused = client.post("/ui/upload", content=many, headers={**SCRIPT, **content_type()})
        assert refused.status_code == 413, refused.text
        assert "server.max_upload_body_bytes" in refused.text
        big = form([("big.md", b"x" * 20_000)])
        refused = client.post("/ui/upload", content=big, headers={**SCRIPT, **content_type()})
        assert refused.status_code == 413, refused.text
        error = refused.text
        assert "big.md" in error and "server.max_upload_bytes" in error
        assert "max_upload_body_bytes" not in error
    assert not any((data / "uploads" / "default").iterdir())


@pytest.mark.parametrize("message", ["[" * 5000, '{"question": ' + "[" * 5000 + "]" * 5000 + "}"])
def test_a_deeply_nested_websocket_message_is_answered_and_the_socket_stays_open(
    tmp_path: Path, message: str
) -> None:
    with (
        _client(fast_settings(tmp_path / "data")) as client,
        client.websocket_connect("/api/stream", headers={"host": "127.0.0.1"}) as socket,
    ):
        socket.send_text(message)
        error = socket.receive_json()
        assert error["event"] == "error" and error["status"] == 400
        assert "nested" in error["error"]
        socket.send_json({"question": "hello", "id": 2})
        assert socket.receive_json()["id"] == 2  # still answering


def test_a_failed_upload_names_its_file_as_sent_not_the_server_path(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with _client(fast_settings(data)) as client:
        sent = form([("季度报告.pdf", b"not a pdf"), ("ok.md", b"# OK\n\nfine\n")])
        started = client.post("/ui/upload", content=sent, headers={**SCRIPT, **content_type()})
        assert started.status_code == 202, started.text
        failed, done = _finished(client, started.json()["url"])["files"]
    assert done["state"] == "done" and failed["state"] == "failed"
    assert failed["reason"].startswith("季度报告.pdf: is not a readable PDF"), failed["reason"]
    assert str(data) not in failed["reason"] and str(data.resolve()) not in failed["reason"]
