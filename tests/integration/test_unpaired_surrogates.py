"""A lone UTF-16 surrogate in any user text is refused, naming the field, at every entry point.

JSON's ``"\\ud800"`` parses into a Python string that nothing can encode: it once reached
SQLite and the JSON reply and came back as an HTTP 500. Command lines carry one when their
bytes are not UTF-8 (Python's surrogateescape). Each case here goes through a real
interface: raw JSON to a running ``serve http``, its WebSocket, the MCP SDK client, the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from websockets.sync.client import connect

from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import ServeOptions, build_local
from tests.helpers import WAIT_S, fast_settings, knowhub, write
from tests.http_helpers import FULL, TOKEN_ENV, ApiServer, api_server, build_corpus

S = "\ud800"


def refusal(field: str, at: int = 0, char: str = "D800") -> str:
    return (
        f"{field}: contains an unpaired surrogate (U+{char}) at position {at}; "
        "send valid UTF-8 text"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    root = tmp_path_factory.mktemp("surrogates")
    with api_server(cwd=root, data_dir=build_corpus(root), env=TOKEN_ENV, token=FULL) as running:
        yield running


def _raw_post(server: ApiServer, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    # json.dumps writes the surrogate as the escape \ud800, as a client's JSON would carry it.
    raw = json.dumps(body).encode("ascii")
    response = server.post(path, content=raw, headers={"Content-Type": "application/json"})
    return response.status_code, response.json()


SEARCH_FIELDS = [
    ({"query": S}, "query", 0),
    ({"query": "ab" + S}, "query", 2),
    ({"query": "backups", "collection": S}, "collection", 0),
    ({"query": "backups", "filters": {S: "ops"}}, "filters key", 0),
    ({"query": "backups", "filters": {"team": S}}, "filters.team", 0),
    ({"query": "backups", "filters": {"team": {"in": ["ops", S]}}}, "filters.team.in[1]", 0),
    ({"query": "backups", S: 1}, "field name", 0),
]
ASK_FIELDS = [
    ({"question": S}, "question", 0),
    ({"question": S, "stream": True}, "question", 0),
    ({"question": "backups?", "collection": S}, "collection", 0),
    ({"question": "backups?", "filters": {"team": S}}, "filters.team", 0),
    ({"question": "backups?", "session_id": S}, "session_id", 0),
    (
        {"question": "backups?", "history": [{"role": "user", "content": "x" + S}]},
        "history[0].content",
        1,
    ),
    ({"question": "backups?", "history": [{"role": S, "content": "hi"}]}, "history[0].role", 0),
    ({"question": "backups?", S: 1}, "field name", 0),
]


@pytest.mark.parametrize(
    ("path", "body", "field", "at"),
    [("/api/search", *case) for case in SEARCH_FIELDS]
    + [("/api/retrieval/debug", *case) for case in SEARCH_FIELDS]
    + [("/api/ask", *case) for case in ASK_FIELDS],
)
def test_http_api_refuses_a_surrogate_in_any_text_field_with_400(
    server: ApiServer, path: str, body: dict[str, Any], field: str, at: int
) -> None:
    status, answer = _raw_post(server, path, body)
    assert (status, answer) == (400, {"error": refusal(field, at), "status": 400})


def test_http_server_logs_no_error_after_surrogates(server: ApiServer) -> None:
    status, _ = _raw_post(server, "/api/search", {"query": S})
    assert status == 400
    after, body = _raw_post(server, "/api/search", {"query": "How often do backups run?"})
    assert after == 200 and body["hits"]
    assert "Traceback" not in server.logs() and "ERROR" not in server.logs(), server.logs()


def test_websocket_answers_a_surrogate_with_an_error_event_and_stays_open(
    server: ApiServer,
) -> None:
    cases = [
        ({"question": S}, "question"),
        ({"question": "backups?", "collection": S}, "collection"),
        ({"question": "backups?", "filters": {"team": S}}, "filters.team"),
        ({"question": "backups?", "session_id": S}, "session_id"),
        (
            {"question": "backups?", "history": [{"role": "user", "content": S}]},
            "history[0].content",
        ),
        ({"question": "backups?", "id": S}, "id"),
    ]
    headers = {"Authorization": f"Bearer {FULL}"}
    with connect(server.ws_url, additional_headers=headers, proxy=None, open_timeout=WAIT_S) as ws:
        for message, field in cases:
            ws.send(json.dumps(message))
            event = json.loads(ws.recv(timeout=WAIT_S))
            assert event == {"event": "error", "status": 400, "error": refusal(field)}
        ws.send(json.dumps({"question": "How long are backups kept?"}))
        while (event := json.loads(ws.recv(timeout=WAIT_S)))["event"] not in ("end", "error"):
            pass
        assert event["event"] == "end", event


# -- MCP: the SDK's client, in memory (the only transport that can carry a surrogate:
# -- stdio and HTTP refuse the JSON before any tool sees it) ---------------------------

# Arguments with length limits never reach a tool: pydantic-core cannot measure such a
# string and refuses it first; the server words that refusal as the tools' own check does.
INVALID = "1 invalid argument: "


@pytest.mark.anyio
async def test_mcp_tools_refuse_a_surrogate_in_any_argument(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "ops.md", "# Ops\n\nBackups run nightly.\n")
    settings = fast_settings(tmp_path / "data")
    server, service = build_local(settings, ServeOptions(docs=tmp_path / "docs"), Metrics())
    service.start()
    assert service.ready.wait(60), "the first sync did not finish"
    query = "query_knowledge_hub"
    cases = [
        (query, {"query": "backups", "collection": S}, refusal("collection")),
        (query, {"query": "backups", "filters": {"team": S}}, refusal("filters.team")),
        (
            "get_document_summary",
            {"source_hash": "abcdef12", "collection": S},
            refusal("collection"),
        ),
        ("ingest", {"path": "ops.md", "tags": {"team": S}}, refusal("tags", 5)),  # "team=…"
        ("ingest", {"path": "ops.md", "collection": S}, refusal("collection")),
        (query, {"query": S}, INVALID + refusal("query")),
        ("search_docs", {"query": "ab" + S}, INVALID + refusal("query", 2)),
        ("get_content", {"chunk_id": S}, INVALID + refusal("chunk_id")),
        ("read_document", {"document": S}, INVALID + refusal("document")),
        ("read_document", {"document": "ops.md", "collection": S}, refusal("collection")),
        ("get_document_summary", {"source_hash": S * 8}, INVALID + refusal("source_hash")),
        ("ingest", {"path": S}, INVALID + refusal("path")),
    ]
    try:
        async with Client(server) as client:
            for tool, args, message in cases:
                result = await client.call_tool(tool, args)
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error, f"{tool}({args!a}) should fail, got {text}"
                assert message in text, text
            ok = await client.call_tool(query, {"query": "backups"})
            assert not ok.is_error
    finally:
        service.close()


# -- CLI: bytes that are not UTF-8 arrive as surrogates (U+DCxx) ------------------------


def test_cli_refuses_undecodable_arguments_naming_them(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "ops.md", "# Ops\n\nBackups run nightly.\n")
    assert knowhub("ingest", str(tmp_path / "docs"), cwd=tmp_path).returncode == 0
    bad = "\udcff"  # the byte 0xff on the command line
    cases = [
        (["search", "back" + bad + "ups"], refusal("query", 4, "DCFF")),
        (["ask", bad], refusal("question", 0, "DCFF")),
        (["search", "backups", "-c", bad], refusal("collection", 0, "DCFF")),
        (["search", "backups", "--filter", "team=" + bad], refusal("--filter", 5, "DCFF")),
        (["ingest", str(tmp_path / "docs"), "--tag", "a=" + bad], refusal("--tag", 2, "DCFF")),
        (["show", bad], refusal("chunk_id", 0, "DCFF")),
    ]
    for args, message in cases:
        result = knowhub(*args, cwd=tmp_path)
        assert result.returncode == 1, (args, result.stdout)
        assert f"error: {message}" in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr and "UnicodeEncodeError" not in result.stderr
