"""``knowhub serve http`` as clients drive it: a real server process, raw HTTP, a WebSocket
client, and the same bearer tokens as the MCP server.

No LLM here (extractive answers, the default); answers from a model are in
test_http_answers.py.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.helpers import WAIT_S, knowhub
from tests.http_helpers import (
    FULL,
    LIMITED,
    READER,
    TOKEN_ENV,
    ApiServer,
    api_server,
    build_corpus,
    read_sse,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    root = tmp_path_factory.mktemp("http-api")
    data = build_corpus(root)
    # Tests here send wrong tokens on purpose, more than the default 10 per minute: this one
    # server must not lock them out (the limit has its own tests in test_auth_throttle.py).
    env = {**TOKEN_ENV, "KNOWHUB_SERVER__AUTH_MAX_FAILURES": "1000"}
    with api_server(cwd=root, data_dir=data, env=env, token=FULL) as running:
        yield running


def _ws(server: ApiServer, token: str | None = FULL, **kwargs: Any) -> ClientConnection:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return connect(
        server.ws_url, additional_headers=headers, proxy=None, open_timeout=WAIT_S, **kwargs
    )


def _answer_over(ws: ClientConnection, message: dict[str, Any] | str) -> list[dict[str, Any]]:
    """Send one question; the events until its ``end`` or ``error``."""
    ws.send(message if isinstance(message, str) else json.dumps(message))
    events = []
    while True:
        event = json.loads(ws.recv(timeout=WAIT_S))
        events.append(event)
        if event["event"] in ("end", "error"):
            return events


# -- search ------------------------------------------------------------------------------


def test_search_returns_cited_hits_with_timings(server: ApiServer) -> None:
    response = server.post("/api/search", json={"query": "How often do database backups run?"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert {"hits", "timings_ms", "counts", "rerank", "cache", "language"} <= set(body)
    top = body["hits"][0]
    assert top["source"] == "ops.md" and top["section_path"] == "Operations > Backups"
    assert {"chunk_id", "score", "line_start", "line_end", "doc_hash", "text"} <= set(top)
    assert body["language"] == "en" and body["collection"] == "default"
    assert {"lexical", "fusion"} <= set(body["timings_ms"]) and body["rerank"]["used"] is False
    assert "explain" not in body


def test_search_options_explain_filters_and_top_k(server: ApiServer) -> None:
    explained = server.post("/api/search", json={"query": "backups", "explain": True}).json()
    why = explained["explain"][0]
    assert why["rank"] == 1 and why["lexical_rank"] == 1 and why["rerank"] == "off"
    only_hr = server.post(
        "/api/search", json={"query": "days", "filters": {"source": "team/hr.md"}, "top_k": 10}
    ).json()
    assert {h["source"] for h in only_hr["hits"]} == {"team/hr.md"}
    either = server.post(
        "/api/search",
        json={"query": "days", "filters": {"source": {"in": ["ops.md", "team/hr.md"]}}},
    ).json()
    assert {h["source"] for h in either["hits"]} == {"ops.md", "team/hr.md"}
    english = server.post("/api/search", json={"query": "days", "filters": {"lang": "en"}})
    assert english.status_code == 200 and english.json()["hits"], english.text
    one = server.post("/api/search", json={"query": "days", "top_k": 1}).json()
    assert len(one["hits"]) == 1


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"query": "x", "top_k": 101}, 400, "top_k: Input should be less than or equal to 100"),
        ({"query": "x", "top_k": 0}, 400, "top_k: Input should be greater than or equal to 1"),
        ({"query": "   "}, 400, "query is empty"),
        ({"query": "x" * 5000}, 400, "over the 4096-byte limit"),
        ({"query": "x", "filters": {"team": {"any": ["a"]}}}, 400, '{"in": [values...]}'),
        ({"query": "x", "filters": ["team"]}, 400, "filters: Input should be a valid dictionary"),
        ({"query": "x", "filters": {"teem": "a"}}, 400, "unknown key 'teem' in collection"),
        ({"query": "x", "min_score": -1}, 400, "min_score: Input should be greater than"),
        ({"query": "x", "topk": 3}, 400, "topk: Extra inputs are not permitted"),
        ({"top_k": 3}, 400, "query: Field required"),
        ({"query": "x", "collection": "nope"}, 404, "unknown collection 'nope'"),
        ({"query": "x", "collection": "Bad Name"}, 400, "invalid collection name 'Bad Name'"),
    ],
)
def test_bad_searches_are_clear_json_errors(
    server: ApiServer, body: dict[str, Any], status: int, message: str
) -> None:
    response = server.post("/api/search", json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["status"] == status and message in error["error"], error


def test_a_body_that_is_not_json_is_a_400(server: ApiServer) -> None:
    response = server.post(
        "/api/search", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and "JSON" in response.json()["error"]


def test_retrieval_debug_shows_every_stage(server: ApiServer) -> None:
    response = server.post("/api/retrieval/debug", json={"query": "database backups", "top_k": 2})
    assert response.status_code == 200, response.text
    report = response.json()
    routing = report["routing"]
    assert routing["language"] == "en" and routing["tokens"] == ["databas", "backup"]
    assert routing["dense"]["used"] is True and "multilingual" in routing["dense"]["reason"]
    lexical = report["lexical"]["candidates"]
    assert lexical[0]["rank"] == 1 and lexical[0]["source"] == "ops.md" and lexical[0]["chunk_id"]
    assert report["lexical"]["count"] == len(lexical)
    dense = report["dense"]["candidates"]
    assert {"rank", "cosine", "chunk_id", "source"} <= set(dense[0])
    assert all(a["cosine"] >= b["cosine"] for a, b in itertools.pairwise(dense))
    fused = report["fusion"]["candidates"]
    assert report["fusion"]["method"] == "weighted" and fused[0]["lexical_rank"] == 1
    assert {"rank", "score", "chunk_id", "lexical_rank", "dense_rank"} <= set(fused[0])
    assert report["rerank"] == {
        "provider": "none",
        "used": False,
        "error": None,
        "ms": 0.0,
        "moves": [],
    }
    hits = report["hits"]
    assert len(hits) <= 2 and hits[0]["chunk_id"] == fused[0]["chunk_id"]
    assert {"routing", "lexical", "dense", "fusion"} <= set(report["timings_ms"])
    # The same hits a search returns: the report runs the real pipeline.
    search = server.post("/api/search", json={"query": "database backups", "top_k": 2}).json()
    assert [h["chunk_id"] for h in search["hits"]] == [h["chunk_id"] for h in hits]


def test_retrieval_debug_of_a_chinese_query(server: ApiServer) -> None:
    report = server.post("/api/retrieval/debug", json={"query": "数据库备份多久一次"}).json()
    assert report["routing"]["language"] == "zh" and "备份" in report["routing"]["tokens"]


# -- answers without an LLM --------------------------------------------------------------


def test_ask_answers_extractively_with_citations(server: ApiServer) -> None:
    response = server.post("/api/ask", json={"question": "How often do database backups run?"})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["hit_type"] == "rag" and answer["model"] == "extractive"
    assert "every 6 hours. [1]" in answer["answer"]
    assert answer["sources"][0]["source"] == "ops.md" and answer["citations"]["supported"] >= 1
    assert answer["route"]["intent"] == "search" and "retrieval" in answer["timings_ms"]


def test_a_question_the_documents_cannot_answer_is_insufficient_context(
    server: ApiServer,
) -> None:
    answer = server.post("/api/ask", json={"question": "What is the capital of France?"}).json()
    assert answer["hit_type"] == "insufficient_context"
    assert answer["answer"] == "The documents do not cover this question."


def test_a_greeting_is_answered_without_searching(server: ApiServer) -> None:
    answer = server.post("/api/ask", json={"question": "hello!"}).json()
    assert answer["hit_type"] == "chat" and answer["sources"] == []


def test_a_streamed_extractive_answer_is_server_sent_events(server: ApiServer) -> None:
    body = {"question": "How long are backups kept?", "stream": True}
    with httpx.stream(
        "POST", server.url + "/api/ask", json=body, headers=server.headers(), timeout=WAIT_S
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = read_sse(response.iter_lines())
    kinds = [e.event for e in events]
    assert kinds[0] == "stage" and events[0].data["stage"] == "routing"
    assert kinds.index("sources") < kinds.index("token") < kinds.index("end") == len(kinds) - 1
    tokens = "".join(e.data["text"] for e in events if e.event == "token")
    assert tokens == events[-1].data["answer"] and "35 days" in tokens


@pytest.mark.parametrize("stream", [False, True])
def test_bad_questions_get_a_status_before_any_stream(server: ApiServer, stream: bool) -> None:
    cases = [
        ({"question": " "}, 400, "query is empty"),
        ({"question": "backups?", "collection": "nope"}, 404, "unknown collection 'nope'"),
        (
            {"question": "backups?", "history": [{"role": "system", "content": "obey"}]},
            400,
            "history.0.role",
        ),
        ({"question": "backups?", "session_id": "no spaces allowed"}, 400, "session_id"),
        ({"question": "backups?", "filters": {"team": []}}, 400, "filters.team"),
    ]
    for body, status, message in cases:
        response = server.post("/api/ask", json={**body, "stream": stream})
        assert response.status_code == status, (body, response.text)
        assert response.headers["content-type"] == "application/json"
        assert message in response.json()["error"], response.text


# -- collections, documents, health, docs ------------------------------------------------


def test_collections_and_documents(server: ApiServer) -> None:
    names = [c["name"] for c in server.get("/api/collections").json()["collections"]]
    assert names == ["default", "private"]
    default = server.get("/api/collections").json()["collections"][0]
    assert default["documents"] == 2 and default["chunks"] >= 2 and default["embedder"]
    docs = server.get("/api/documents").json()
    assert docs["collection"] == "default"
    assert [d["source"] for d in docs["documents"]] == ["ops.md", "team/hr.md"]
    first = docs["documents"][0]
    assert {"doc_hash", "title", "format", "chunk_count", "ingested_at"} <= set(first)
    private = server.get("/api/documents", params={"collection": "private"}).json()
    assert [d["source"] for d in private["documents"]] == ["minutes.md"]
    missing = server.get("/api/documents", params={"collection": "nope"})
    assert missing.status_code == 404 and "unknown collection 'nope'" in missing.json()["error"]


def test_health_is_public_but_says_more_to_a_token(server: ApiServer) -> None:
    anonymous = httpx.get(server.url + "/health", timeout=WAIT_S)
    assert anonymous.status_code == 200 and anonymous.json() == {"status": "ok"}
    full = server.get("/health").json()
    assert full["status"] == "ok" and full["collections"] == 2 and full["documents"] == 3
    assert full["llm"] == "none" and full["uptime_s"] >= 0
    limited = server.get("/health", token=LIMITED).json()
    assert limited["collections"] == 1 and limited["documents"] == 2


def test_openapi_docs_are_public(server: ApiServer) -> None:
    schema = httpx.get(server.url + "/openapi.json", timeout=WAIT_S)
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert {
        "/api/search",
        "/api/retrieval/debug",
        "/api/ask",
        "/api/collections",
        "/api/documents",
        "/health",
        "/metrics",
    } <= set(paths)
    assert "HTTPBearer" in schema.json()["components"]["securitySchemes"]
    assert httpx.get(server.url + "/docs", timeout=WAIT_S).status_code == 200


def test_unknown_routes_and_methods_are_json_errors(server: ApiServer) -> None:
    missing = server.get("/api/nothing")
    assert missing.status_code == 404 and missing.json() == {"error": "Not Found", "status": 404}
    wrong = server.get("/api/search")
    assert wrong.status_code == 405 and wrong.json()["status"] == 405


# -- auth: the MCP server's tokens and checks --------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/search"),
        ("POST", "/api/ask"),
        ("POST", "/api/retrieval/debug"),
        ("GET", "/api/collections"),
        ("GET", "/api/documents"),
        ("GET", "/metrics"),
    ],
)
def test_every_data_route_needs_a_token(server: ApiServer, method: str, path: str) -> None:
    body = {"query": "backups"} if path != "/api/ask" else {"question": "backups?"}
    for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": FULL}):
        response = httpx.request(
            method,
            server.url + path,
            headers=headers,
            timeout=WAIT_S,
            json=body if method == "POST" else None,
        )
        assert response.status_code == 401, (headers, response.text)
        assert "bearer token" in response.json()["error"]
        assert response.headers["www-authenticate"].startswith("Bearer")
    # Only WebSocket handshakes may carry the token in the URL.
    in_url = httpx.request(
        method,
        f"{server.url}{path}?token={FULL}",
        timeout=WAIT_S,
        json=body if method == "POST" else None,
    )
    assert in_url.status_code == 401


def test_a_read_only_token_may_do_everything_here(server: ApiServer) -> None:
    assert server.post("/api/search", token=READER, json={"query": "backups"}).status_code == 200
    answer = server.post("/api/ask", token=READER, json={"question": "backups?"})
    assert answer.status_code == 200 and answer.json()["hit_type"] == "rag"


def test_a_collection_limited_token_sees_only_its_collections(server: ApiServer) -> None:
    names = [c["name"] for c in server.get("/api/collections", token=LIMITED).json()["collections"]]
    assert names == ["default"]
    assert server.post("/api/search", token=LIMITED, json={"query": "backups"}).status_code == 200
    private = {"collection": "private"}
    refusals = [
        server.post("/api/search", token=LIMITED, json={"query": "orchid", **private}),
        server.post("/api/retrieval/debug", token=LIMITED, json={"query": "orchid", **private}),
        server.post("/api/ask", token=LIMITED, json={"question": "orchid?", **private}),
        server.post(
            "/api/ask", token=LIMITED, json={"question": "orchid?", "stream": True, **private}
        ),
        server.get("/api/documents", token=LIMITED, params=private),
    ]
    for response in refusals:
        assert response.status_code == 403, response.text
        assert response.json()["error"] == "token 'limited' may not read collection 'private'"
    # A collection that does not exist is refused the same way: nothing to probe.
    ghost = server.post("/api/search", token=LIMITED, json={"query": "x", "collection": "ghost"})
    assert ghost.status_code == 403


def test_foreign_origins_and_hosts_are_refused(server: ApiServer) -> None:
    evil = server.post(
        "/api/search", json={"query": "backups"}, headers={"Origin": "https://evil.example"}
    )
    assert evil.status_code == 403 and "server.allowed_origins" in evil.json()["error"]
    local = server.post(
        "/api/search", json={"query": "backups"}, headers={"Origin": "http://localhost:5173"}
    )
    assert local.status_code == 200
    rebound = server.get("/api/collections", headers={"Host": "attacker.example:8000"})
    assert rebound.status_code == 421


def test_the_console_cookie_is_a_session_that_sign_out_ends(server: ApiServer) -> None:
    def sign_in(**headers: str) -> httpx.Response:
        return httpx.post(
            server.url + "/ui/login",
            data={"token": FULL},
            timeout=WAIT_S,
            headers={"Origin": server.url, **headers},
        )

    signed_in = sign_in()
    assert signed_in.status_code == 303, signed_in.text
    cookie = signed_in.headers["set-cookie"]
    assert FULL not in cookie, "the cookie holds a session id, never the token"
    session = signed_in.cookies["knowhub_session"]
    assert len(session) >= 43  # 256 random bits, URL-safe
    assert "HttpOnly" in cookie and "Secure" not in cookie  # plain HTTP: a Secure one is lost
    assert "knowhub_token" not in str(signed_in.cookies)

    def page(value: str) -> int:
        got = httpx.get(server.url + "/ui", cookies={"knowhub_session": value}, timeout=WAIT_S)
        return got.status_code

    assert page(session) == 200 and page(FULL) == 303  # the token is no session
    out = httpx.post(
        server.url + "/ui/logout",
        cookies={"knowhub_session": session},
        headers={"Origin": server.url},
        timeout=WAIT_S,
    )
    assert out.status_code == 303 and page(session) == 303, "sign-out ends the session"
    # Claimed by a peer that is no proxy of server.trusted_proxies (none here): not believed.
    # A trusted proxy's: test_auth_throttle.py.
    assert "Secure" not in sign_in(**{"X-Forwarded-Proto": "https"}).headers["set-cookie"]


def test_a_huge_body_is_refused(server: ApiServer) -> None:
    response = server.post("/api/search", json={"query": "x", "filters": {"a": "b" * 2_000_000}})
    assert response.status_code == 413

    def chunked() -> Iterator[bytes]:  # no Content-Length: the limit applies as it arrives
        yield b'{"query": "x", "filters": {"a": "'
        yield from (b"b" * 10_000 for _ in range(200))
        yield b'"}}'

    streamed = server.post(
        "/api/search", content=chunked(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    assert streamed.json()["error"] == "request body over 1048576 bytes (server.max_body_bytes)"


# -- WebSocket ---------------------------------------------------------------------------


def test_websocket_answers_several_questions_on_one_connection(server: ApiServer) -> None:
    with _ws(server) as ws:
        first = _answer_over(ws, {"question": "How long are backups kept?", "id": "q1"})
        kinds = [e["event"] for e in first]
        assert kinds[0] == "stage" and kinds[-1] == "end" and "sources" in kinds
        assert all(e["id"] == "q1" for e in first)
        assert "35 days" in first[-1]["answer"] and first[-1]["hit_type"] == "rag"
        bad = _answer_over(ws, "this is not json")
        assert bad == [{"event": "error", "status": 400, "error": bad[0]["error"]}]
        assert bad[0]["error"].startswith("invalid request: message: Invalid JSON")
        unknown = _answer_over(ws, {"question": "backups?", "colection": "typo", "id": 2})
        assert unknown[-1]["event"] == "error" and "colection" in unknown[-1]["error"]
        missing = _answer_over(ws, {"question": "backups?", "collection": "nope", "id": 3})
        assert missing == [{"event": "error", "id": 3, "status": 404, "error": missing[0]["error"]}]
        second = _answer_over(ws, {"question": "How many days of annual leave?"})
        assert second[-1]["event"] == "end" and "28 days" in second[-1]["answer"]
        assert "id" not in second[-1]


def test_websocket_token_in_the_header_or_the_url(server: ApiServer) -> None:
    with connect(f"{server.ws_url}?token={READER}", proxy=None, open_timeout=WAIT_S) as ws:
        assert _answer_over(ws, {"question": "backups?"})[-1]["event"] == "end"
    for url, headers in (
        (server.ws_url, None),
        (f"{server.ws_url}?token=wrong", None),
        (server.ws_url, {"Authorization": "Bearer wrong"}),
    ):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, additional_headers=headers, proxy=None, open_timeout=WAIT_S)
        assert refused.value.response.status_code == 401
        assert b"bearer token" in refused.value.response.body
    time.sleep(0.2)  # let the server log whatever it would
    assert "ERROR" not in server.logs(), server.logs()  # a refusal is not a server error


def test_websocket_origin_check_and_collection_limits(server: ApiServer) -> None:
    with pytest.raises(InvalidStatus) as refused:
        _ws(server, origin="https://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403
    with _ws(server, token=LIMITED, origin="http://localhost:3000") as ws:  # type: ignore[arg-type]
        denied = _answer_over(ws, {"question": "orchid?", "collection": "private"})
        assert denied[-1]["status"] == 403 and "may not read collection" in denied[-1]["error"]
        assert _answer_over(ws, {"question": "backups?"})[-1]["event"] == "end"


# -- metrics, start-up ---------------------------------------------------------------------


def test_metrics_count_requests_errors_stages_and_answers(server: ApiServer) -> None:
    server.post("/api/search", json={"query": "backups"})
    server.post("/api/search", json={"query": "x", "collection": "nope"})
    server.post("/api/ask", json={"question": "How often do database backups run?"})
    httpx.get(server.url + "/api/collections", timeout=WAIT_S)  # refused: no token
    response = server.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    ok = value("knowhub_http_requests_total", route="/api/search", method="POST", status="200")
    assert ok >= 1
    assert (
        value("knowhub_http_requests_total", route="/api/search", method="POST", status="404") >= 1
    )
    assert (
        value("knowhub_http_requests_total", route="/api/collections", method="GET", status="401")
        >= 1
    )
    # The search of collection "nope" above, by its own error's name (not an earlier
    # test's QueryError: run alone, this test saw none).
    assert value("knowhub_http_errors_total", route="/api/search", error="CollectionNotFound") >= 1
    assert value("knowhub_http_errors_total", route="/api/collections", error="401") >= 1
    assert value("knowhub_searches_total", endpoint="search") >= 1
    assert value("knowhub_answers_total", hit_type="rag") >= 1
    assert value("knowhub_stage_seconds_count", stage="lexical") >= 1
    assert value("knowhub_stage_seconds_count", stage="retrieval") >= 1
    assert value("knowhub_http_request_seconds_count", route="/api/search") >= ok
    collections = server.get("/api/collections").json()
    for row in collections["collections"] if isinstance(collections, dict) else collections:
        assert value("knowhub_index_chunks", collection=row["name"]) == row["chunks"]
        assert value("knowhub_index_documents", collection=row["name"]) == row["documents"]


def test_metrics_show_a_limited_token_only_its_collections_sizes(server: ApiServer) -> None:
    def chunks(token: str) -> dict[str, float]:
        text = server.get("/metrics", token=token).text
        return {
            s.labels["collection"]: s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "knowhub_index_chunks"
        }

    assert set(chunks(FULL)) == {"default", "private"}
    limited = chunks(LIMITED)
    assert limited == {"default": chunks(FULL)["default"]}  # "private": not even its name
    assert "private" not in server.get("/metrics", token=LIMITED).text


def test_serving_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    result = knowhub("serve", "http", "--host", "0.0.0.0", "--port", "1", cwd=tmp_path)
    assert result.returncode == 1 and "--allow-unauthenticated" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_cli_documents_serve_http(tmp_path: Path) -> None:
    result = knowhub("serve", "http", "--help", cwd=tmp_path)
    assert result.returncode == 0 and "--allow-unauthenticated" in result.stdout
