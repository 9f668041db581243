"""Two ``serve http`` replicas over one store (SQLite data dir, PostgreSQL database) with
requests alternating between them: a conversation, a console sign-in and an upload job are
the store's, not one process's, so either replica serves the next request."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx

from tests import replica_helpers
from tests.helpers import WAIT_S
from tests.http_helpers import FULL, LIMITED, READER
from tests.integration.test_http_answers import FOLLOW_UP, REWRITTEN
from tests.mcp_helpers import wait_until
from tests.replica_helpers import Replicas

FROM_PAGE = {"Sec-Fetch-Site": "same-origin"}  # what the console's own pages send
NOTE = b"# Kiln\n\nThe glaze kiln fires at 1260 degrees.\n"

# The fixtures: two replicas over each backend, and their model.
pair, llm = replica_helpers.pair, replica_helpers.llm


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _ask(url: str, token: str, **body: Any) -> dict[str, Any]:
    response = httpx.post(url + "/api/ask", json=body, headers=_bearer(token), timeout=WAIT_S)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_conversation_goes_on_whichever_replica_answers(pair: Replicas) -> None:
    url = pair.proxy.url
    first = _ask(url, FULL, question="How often do database backups run?", session_id="rr-1")
    assert first["hit_type"] == "rag"
    follow = _ask(url, FULL, question=FOLLOW_UP, session_id="rr-1")
    assert follow["query"] == REWRITTEN and follow["hit_type"] == "rag"
    assert pair.proxy.served_by("POST /api/ask") == pair.urls  # one answer from each
    # Another token, same session id: a conversation of its own, with no earlier turn.
    other = _ask(url, LIMITED, question=FOLLOW_UP, session_id="rr-1")
    assert other["query"] == FOLLOW_UP


def test_a_console_sign_in_holds_on_every_replica_until_signed_out(pair: Replicas) -> None:
    with httpx.Client(base_url=pair.proxy.url, timeout=WAIT_S, follow_redirects=False) as browser:
        signed = browser.post("/ui/login", data={"token": READER}, headers=FROM_PAGE)
        assert signed.status_code == 303 and "knowhub_session" in browser.cookies
        for _ in range(4):  # alternating: two pages from each replica
            page = browser.get("/ui/documents")
            assert page.status_code == 200, page.text
        assert pair.proxy.served_by("GET /ui/documents") == pair.urls
        assert browser.post("/ui/logout", headers=FROM_PAGE).status_code == 303
        cookie = {"knowhub_session": signed.cookies["knowhub_session"]}
        for server in (pair.first, pair.second):  # a copied cookie is worth nothing now
            again = httpx.get(server.url + "/ui/documents", cookies=cookie, timeout=WAIT_S)
            assert again.status_code == 303 and "/ui/login" in again.headers["location"]


def test_an_upload_job_is_reported_by_the_other_replica(pair: Replicas) -> None:
    started = httpx.post(
        pair.first.url + "/ui/upload",
        data={"collection": "default"},
        files=[("files", ("kiln.md", NOTE, "text/markdown"))],
        headers={**FROM_PAGE, "Accept": "application/json", **_bearer(FULL)},
        timeout=WAIT_S,
    )
    assert started.status_code == 202, started.text
    job = pair.second.url + started.json()["url"]

    def finished() -> dict[str, Any] | None:
        view: dict[str, Any] = httpx.get(job, headers=_bearer(FULL), timeout=WAIT_S).json()
        return view if view["finished"] else None

    view = wait_until(finished, timeout=WAIT_S, interval=0.1)
    assert [(f["name"], f["state"]) for f in view["files"]] == [("kiln.md", "done")]
    assert not view["error"]
    # Only the token that started it may see it, there as here.
    assert httpx.get(job, headers=_bearer(LIMITED), timeout=WAIT_S).status_code == 404
    found = httpx.post(
        pair.second.url + "/api/search",
        json={"query": "glaze kiln degrees"},
        headers=_bearer(FULL),
        timeout=WAIT_S,
    ).json()
    assert found["hits"][0]["source"].endswith("kiln.md")  # in the store they share
