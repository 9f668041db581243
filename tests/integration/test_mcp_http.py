"""``knowhub serve mcp --transport http`` in local mode, driven as a client would drive it.

Real server subprocesses, the official SDK client over streamable HTTP, and raw HTTP for
what a client never sends on purpose (bad tokens, foreign origins, huge or broken bodies).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import MCPError
from mcp_types import CallToolResult, TextContent
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import WAIT_S, cli_env, knowhub, write
from tests.mcp_helpers import (
    HttpServer,
    eventually,
    free_port,
    http_server,
    local_tools,
    wait_until,
)

pytestmark = pytest.mark.anyio

FULL = "full-Zq8v3KxT1s9wYp2L"
READER = "reader-Hn4cR7mB0dEj5uWa"
LIMITED = "limited-Gt6yQ1oV8kSx3PzN"
BOARD = "board-Lk2wX9rN4vBq7TcE"  # limited to `private` alone
TENANT = "tenant-Rf5hJ0pZ3mCs8WdY"  # a data scope: tenant acme
SECRETS = (FULL, READER, LIMITED, BOARD, TENANT)
TOKENS = [
    {"name": "full", "token_env": "KH_TEST_TOK_FULL"},
    {"name": "reader", "token_env": "KH_TEST_TOK_READER", "read_only": True},
    {"name": "limited", "token_env": "KH_TEST_TOK_LIMITED", "collections": ["default"]},
    {"name": "board", "token_env": "KH_TEST_TOK_BOARD", "collections": ["private"]},
    {"name": "tenant", "token_env": "KH_TEST_TOK_TENANT", "tenants": ["acme"]},
]
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps(TOKENS),
    "KNOWHUB_SERVER__MAX_BODY_BYTES": "2048",
    # Wrong tokens are sent here on purpose: not to be locked out by them (the throttle has
    # its own tests in test_auth_throttle.py).
    "KNOWHUB_SERVER__AUTH_MAX_FAILURES": "1000",
    "KH_TEST_TOK_FULL": FULL,
    "KH_TEST_TOK_READER": READER,
    "KH_TEST_TOK_LIMITED": LIMITED,
    "KH_TEST_TOK_BOARD": BOARD,
    "KH_TEST_TOK_TENANT": TENANT,
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
GUIDE = """# Deployment guide

## Rotating signing keys

The vault rotates the signing keys every ninety days. Operators confirm the rotation
in the audit dashboard and archive the retired keys for one year.

## Backups

Nightly backups of the ledger database are copied to cold storage in another region.
"""
FAQ = """# Frequently asked questions

## Who approves a refund?

A refund above five hundred euros needs the approval of the finance lead.
"""
NOTES = {
    "more/alpha.md": "# Alpha notes\n\nThe alpha telescope calibrates its mirrors at dawn.\n",
    "more/beta.md": "# Beta notes\n\nThe beta reactor cools down with heavy water loops.\n",
}
PRIVATE = "# Board minutes\n\nThe orchid merger closes in spring; nobody outside the board knows.\n"


# -- the shared server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One token-protected server for the whole module; its docs indexed before use.

    Besides ``default`` (the served docs), the store holds a ``private`` collection whose
    document is nowhere else: what the collection-limited token must never see.
    """
    root = tmp_path_factory.mktemp("mcp-http")
    write(root / "private" / "minutes.md", PRIVATE)
    made = knowhub("--data-dir", "data", "ingest", "private", "-c", "private", cwd=root)
    assert made.returncode == 0, made.stderr
    write(root / "docs" / "guide.md", GUIDE)
    write(root / "docs" / "faq.md", FAQ)
    for name, text in NOTES.items():
        write(root / "docs" / name, text)
    with http_server("--docs", "docs", cwd=root, data_dir=root / "data", env=TOKEN_ENV) as running:
        wait_until(lambda: _health(running, FULL).get("indexing") is False)
        yield running


def _health(server: HttpServer, token: str | None) -> dict[str, Any]:
    response = server.get("/health", token)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    structured: dict[str, Any] | None = result.structured_content
    assert structured is not None, _text(result)
    return structured


def _metric(text: str, name: str, **labels: str) -> float:
    """The sum of the samples called ``name`` whose labels include ``labels``."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


# -- 1. every tool with the full token ---------------------------------------------------


async def test_full_token_uses_every_tool(server: HttpServer, tmp_path: Path) -> None:
    async with server.client(token=FULL) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == await local_tools(tmp_path)  # every tool the server has

        found = await client.call_tool(
            "query_knowledge_hub", {"query": "how often are signing keys rotated", "top_k": 3}
        )
        search = _structured(found)
        assert search["collection"] == "default"
        assert 1 <= len(search["hits"]) <= 3
        top = search["hits"][0]
        assert top["n"] == 1
        assert top["source"].endswith("guide.md")
        assert "ninety days" in top["text"]
        assert top["line_start"] >= 1 and top["line_end"] >= top["line_start"]
        markdown = _text(found)
        assert markdown.startswith("3 results for") or "results for" in markdown
        assert "**[1]**" in markdown
        assert f"chunk `{top['chunk_id']}`" in markdown

        docs = _structured(await client.call_tool("search_docs", {"query": "refund approval"}))
        assert docs["hits"][0]["source"].endswith("faq.md")
        assert "finance lead" in docs["hits"][0]["text"]

        listed = _structured(await client.call_tool("list_collections", {}))
        default = next(c for c in listed["collections"] if c["name"] == "default")
        assert default["documents"] == 4 and default["chunks"] >= 4

        summary = _structured(
            await client.call_tool("get_document_summary", {"source_hash": top["source_hash"][:12]})
        )
        assert summary["source_hash"] == top["source_hash"]
        assert summary["source"] == top["source"]
        assert summary["chunk_count"] >= 1

        content = _structured(await client.call_tool("get_content", {"chunk_id": top["chunk_id"]}))
        assert content["chunk_id"] == top["chunk_id"]
        assert "ninety days" in content["text"]

        reports: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append((progress, total, message))

        ingested = _structured(
            await client.call_tool(
                "ingest", {"path": "more", "collection": "notes"}, progress_callback=on_progress
            )
        )
        assert ingested["collection"] == "notes"
        assert sorted(Path(s).name for s in ingested["added"]) == ["alpha.md", "beta.md"]
        assert ingested["failed"] == [] and ingested["chunks"] >= 2

        async def finished() -> bool:  # the SDK runs progress callbacks in their own tasks
            return any(done == total for done, total, _ in reports)

        await eventually(finished)
        assert all("chunks embedded" in (message or "") for _, _, message in reports)

        notes = _structured(
            await client.call_tool(
                "query_knowledge_hub", {"query": "telescope", "collection": "notes"}
            )
        )
        assert notes["hits"][0]["source"].endswith("alpha.md")


async def test_ask_answers_over_http_citing_its_sources(server: HttpServer) -> None:
    async with server.client(token=FULL) as client:
        asked = await client.call_tool("ask", {"question": "How often are signing keys rotated?"})
        answered = _structured(asked)
        assert answered["hit_type"] == "rag" and "ninety days" in answered["answer"]
        assert answered["sources"][0]["source"].endswith("guide.md")
        assert "Sources:\n[1] " in _text(asked)


# -- 2. authentication, /health, /metrics --------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong-token-value"])
def test_missing_or_wrong_token_is_401(server: HttpServer, token: str | None) -> None:
    response = server.post("/mcp", token or "", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 401, response.text
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert "bearer token" in body["error"]
    lowered = response.text.lower()
    assert "session" not in lowered and "collection" not in lowered


async def test_sdk_client_with_wrong_token_cannot_connect(server: HttpServer) -> None:
    connected = False
    with pytest.raises(ExceptionGroup) as raised:
        async with server.client(token="wrong-token-value") as client:
            await client.list_tools()
            connected = True
    assert raised.group_contains(MCPError)
    assert not connected


def test_health_tells_strangers_only_the_status(server: HttpServer) -> None:
    assert _health(server, "") == {"status": "ok"}
    assert _health(server, "wrong-token-value") == {"status": "ok"}
    full = _health(server, FULL)
    assert full["status"] == "ok" and full["mode"] == "local"
    assert isinstance(full["uptime_s"], float | int) and full["uptime_s"] >= 0
    assert full["sessions"] == 1
    assert isinstance(full["chunks"], int) and full["chunks"] >= 4


async def test_health_shows_a_scoped_token_only_what_it_may_read(server: HttpServer) -> None:
    async with server.client(token=FULL) as client:
        listed = _structured(await client.call_tool("list_collections", {}))["collections"]
    chunks = {c["name"]: c["chunks"] for c in listed}
    assert _health(server, FULL)["chunks"] == sum(chunks.values())
    for token, readable in ((LIMITED, "default"), (BOARD, "private")):
        health = _health(server, token)
        assert health["chunks"] == chunks[readable], (token, health)
        assert health["collections"] == 1
        assert "sessions" not in health and "loaded" not in health, health
    scoped = _health(server, TENANT)  # whole-collection counts would count hidden documents
    assert "chunks" not in scoped and "sessions" not in scoped, scoped
    assert scoped["status"] == "ok" and scoped["mode"] == "local"


async def test_metrics_need_a_token_and_count_searches(server: HttpServer) -> None:
    assert server.get("/metrics", "").status_code == 401
    assert server.get("/metrics", "wrong-token-value").status_code == 401

    def scrape() -> str:
        response = server.get("/metrics", FULL)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/plain")
        return response.text

    before = scrape()

    async with server.client(token=READER) as client:
        _structured(await client.call_tool("query_knowledge_hub", {"query": "backups"}))
        _structured(await client.call_tool("search_docs", {"query": "refund"}))
    after = scrape()
    searches = _metric(after, "knowhub_searches_total")
    assert searches == _metric(before, "knowhub_searches_total") + 2
    assert _metric(after, "knowhub_searches_total", tool="search_docs") >= 1
    assert _metric(after, "knowhub_search_seconds_count", interface="mcp") == searches
    assert _metric(after, "knowhub_search_seconds_bucket", le="+Inf") == searches
    assert 'knowhub_search_seconds_bucket{interface="mcp",le="0.005"}' in after
    assert _metric(after, "knowhub_ingest_documents_total", result="added") >= 4
    assert "# TYPE knowhub_sessions gauge" in after
    assert _metric(after, "knowhub_stage_seconds_count", stage="lexical") == searches
    assert _metric(after, "knowhub_ingest_chunks_total") >= 4
    full = server.get("/health", FULL).json()
    assert _metric(after, "knowhub_index_chunks") == full["chunks"]  # summed over collections
    assert _metric(after, "knowhub_index_documents", collection="default") >= 4


def test_metrics_show_a_limited_token_only_its_collections_sizes(server: HttpServer) -> None:
    def collections(token: str) -> set[str]:
        text = server.get("/metrics", token).text
        return {
            s.labels["collection"]
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name in ("knowhub_index_chunks", "knowhub_index_documents")
        }

    assert {"default", "private"} <= collections(FULL)  # (and what earlier tests ingested)
    assert collections(LIMITED) == {"default"}
    assert "private" not in server.get("/metrics", LIMITED).text


# -- 3. what each token may do --------------------------------------------------------------


async def test_each_token_is_offered_only_the_tools_it_may_call(server: HttpServer) -> None:
    async with server.client(token=FULL) as client:
        everything = {t.name for t in (await client.list_tools()).tools}
    async with server.client(token=READER) as client:
        offered = {t.name for t in (await client.list_tools()).tools}
    assert "ingest" in everything
    assert offered == everything - {"ingest"}


async def test_a_token_limited_to_one_collection_uses_it_by_default(server: HttpServer) -> None:
    async with server.client(token=BOARD) as client:
        found = _structured(await client.call_tool("query_knowledge_hub", {"query": "orchid"}))
        asked = _structured(await client.call_tool("ask", {"question": "When does it close?"}))
        summary = await client.call_tool(
            "get_document_summary", {"source_hash": found["hits"][0]["source_hash"]}
        )
    assert found["collection"] == "private" and "orchid" in found["hits"][0]["text"]
    assert {s["source"] for s in asked["sources"]} <= {"minutes.md"}
    assert _structured(summary)["collection"] == "private"


async def test_read_only_token_searches_but_cannot_ingest(server: HttpServer) -> None:
    def refusals() -> float:
        text = server.get("/metrics", FULL).text
        return _metric(text, "knowhub_tool_calls_total", tool="ingest", outcome="refused")

    before = refusals()
    async with server.client(token=READER) as client:
        refused = await client.call_tool("ingest", {"path": "more", "collection": "default"})
        assert refused.is_error
        assert "read-only" in _text(refused) and "'reader'" in _text(refused)
        assert refusals() == before + 1  # counted, as every call's outcome is
        found = _structured(await client.call_tool("query_knowledge_hub", {"query": "refund"}))
        assert found["hits"][0]["source"].endswith("faq.md")
        content = await client.call_tool("get_content", {"chunk_id": found["hits"][0]["chunk_id"]})
        assert "finance lead" in _structured(content)["text"]


async def test_collection_limited_token_sees_only_its_collections(server: HttpServer) -> None:
    async with server.client(token=FULL) as client:
        everything = _structured(await client.call_tool("list_collections", {}))
        private = _structured(
            await client.call_tool(
                "query_knowledge_hub", {"query": "orchid", "collection": "private"}
            )
        )
    assert {"default", "private"} <= {c["name"] for c in everything["collections"]}
    secret_hit = private["hits"][0]
    assert "orchid merger" in secret_hit["text"]

    async with server.client(token=LIMITED) as client:
        listed = await client.call_tool("list_collections", {})
        assert [c["name"] for c in _structured(listed)["collections"]] == ["default"]
        assert "private" not in _text(listed)

        for tool, args in [
            ("query_knowledge_hub", {"query": "orchid", "collection": "private"}),
            (
                "get_document_summary",
                {"source_hash": secret_hit["source_hash"], "collection": "private"},
            ),
            ("ingest", {"path": "more", "collection": "private"}),
            ("ask", {"question": "orchid", "collection": "private"}),
        ]:
            refused = await client.call_tool(tool, args)
            assert refused.is_error, tool
            assert "may not read collection 'private'" in _text(refused), tool

        hidden = await client.call_tool("get_content", {"chunk_id": secret_hit["chunk_id"]})
        assert hidden.is_error and "no chunk" in _text(hidden)
        assert "orchid" not in _text(hidden)

        allowed = _structured(await client.call_tool("query_knowledge_hub", {"query": "vault"}))
        assert allowed["hits"][0]["source"].endswith("guide.md")
        assert all(h["collection"] == "default" for h in allowed["hits"])


# -- 4. Origin and Host -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://evil.example", 403),
        ("http://localhost.evil.example:80", 403),
        ("http://localhost:80.evil.example", 403),
        ("null", 403),
        ("http://localhost:1234", 200),
        ("http://127.0.0.1:5173", 200),
    ],
)
def test_origin_allow_list(server: HttpServer, origin: str, status: int) -> None:
    response = server.post("/mcp", FULL, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": origin})
    assert response.status_code == status, response.text
    if status == 403:
        assert "allowed_origins" in response.json()["error"]


def test_foreign_host_header_is_421_on_loopback(server: HttpServer) -> None:
    auth = {"Authorization": f"Bearer {FULL}"}
    for path in ("/health", "/metrics"):
        foreign = httpx.get(
            server.url + path, headers={**auth, "Host": "evil.example"}, timeout=WAIT_S
        )
        assert foreign.status_code == 421, foreign.text
        assert "evil.example" in foreign.json()["error"]
    posted = httpx.post(
        server.url + "/mcp",
        json=INITIALIZE,
        headers={**auth, **MCP_HEADERS, "Host": "evil.example:8080"},
        timeout=WAIT_S,
    )
    assert posted.status_code == 421, posted.text
    local = httpx.get(
        server.url + "/health", headers={**auth, "Host": "localhost:9"}, timeout=WAIT_S
    )
    assert local.status_code == 200 and local.json()["mode"] == "local"


# -- 5. body size ------------------------------------------------------------------------


async def test_body_over_the_limit_is_413_and_the_server_goes_on(server: HttpServer) -> None:
    big = json.dumps({**INITIALIZE, "padding": "x" * 10_000}).encode()
    response = server.post("/mcp", FULL, content=big, headers=MCP_HEADERS)
    assert response.status_code == 413, response.text
    assert "2048" in response.json()["error"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the size is only known by reading
        for start in range(0, len(big), 1000):
            yield big[start : start + 1000]

    streamed = server.post("/mcp", FULL, content=chunks(), headers=MCP_HEADERS)
    assert streamed.status_code == 413, streamed.text

    async with server.client(token=FULL) as client:
        _structured(await client.call_tool("query_knowledge_hub", {"query": "backups"}))


# -- 6. malformed requests and tool errors ----------------------------------------------------


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"hello": 1}', b"[1, 2, 3]", b'"just a string"', b""]
)
async def test_malformed_json_rpc_is_rejected(server: HttpServer, body: bytes) -> None:
    response = server.post("/mcp", FULL, content=body, headers=MCP_HEADERS)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]["code"] in (-32700, -32600, -32602)
    async with server.client(token=FULL) as client:
        _structured(await client.call_tool("list_collections", {}))


async def test_tool_errors_are_clear_and_the_server_goes_on(server: HttpServer) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("query_knowledge_hub", {"query": ""}, "at least 1 character"),
        ("query_knowledge_hub", {"query": "keys", "top_k": 99}, "less than or equal to 20"),
        (
            "query_knowledge_hub",
            {"query": "keys", "collection": "nope"},
            "unknown collection 'nope'",
        ),
        ("search_docs", {"query": "keys", "limit": 0}, "greater than or equal to 1"),
        ("get_content", {"chunk_id": "no-such-chunk"}, "no chunk with id 'no-such-chunk'"),
        ("get_document_summary", {"source_hash": "deadbeef"}, "no document with hash 'deadbeef'"),
        ("ingest", {"path": "../x"}, "'..'"),
        ("ingest", {"path": "/etc"}, "outside the document root"),
        ("ingest", {"path": "missing"}, "does not exist"),
    ]
    async with server.client(token=FULL) as client:
        for tool, args, message in cases:
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, args)
            assert message in _text(result), (tool, args, _text(result))
        found = _structured(await client.call_tool("query_knowledge_hub", {"query": "rotation"}))
        assert found["hits"]
    assert server.process.poll() is None


# -- 8. secrets stay out of the logs (runs last: after every request above) ---------------


async def test_tokens_never_reach_the_log(server: HttpServer) -> None:
    for token in (*SECRETS, "wrong-token-value", ""):
        server.get("/health", token)
        server.get("/metrics", token)
        server.post("/mcp", token, json=INITIALIZE, headers=MCP_HEADERS)
    for token in SECRETS:
        async with server.client(token=token) as client:
            await client.call_tool("query_knowledge_hub", {"query": "keys"})
            await client.call_tool("ingest", {"path": "../x"})
    logs = server.logs()
    assert "knowhub MCP (local mode)" in logs  # the log is the right one, and written
    for secret in SECRETS:
        assert secret not in logs


# -- 7. start-up refusals ---------------------------------------------------------------------


def _start(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``serve mcp --transport http ARGS``, which must refuse to start: a server that
    started instead would serve until the run's timeout failed the test."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "knowhub",
            "--data-dir",
            str(cwd / "data"),
            "serve",
            "mcp",
            "--transport",
            "http",
            "--port",
            str(free_port()),
            "--docs",
            "docs",
            *args,
        ],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )


def test_public_host_without_token_is_refused(tmp_path: Path) -> None:
    done = _start("--host", "0.0.0.0", cwd=tmp_path, env={})
    assert done.returncode != 0
    assert "--allow-unauthenticated" in done.stderr
    assert "0.0.0.0" in done.stderr
    assert "Traceback" not in done.stderr


def test_unset_token_variable_is_a_startup_error(tmp_path: Path) -> None:
    tokens = [*TOKENS[:1], {"name": "ghost", "token_env": "KH_TEST_TOK_NEVER_SET"}]
    env = {"KNOWHUB_SERVER__TOKENS": json.dumps(tokens), "KH_TEST_TOK_FULL": FULL}
    done = _start(cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert "KH_TEST_TOK_NEVER_SET" in done.stderr
    assert "Traceback" not in done.stderr
    assert FULL not in done.stderr + done.stdout


async def test_allow_unauthenticated_starts_with_a_warning(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "guide.md", GUIDE)
    with http_server(
        "--host",
        "0.0.0.0",
        "--allow-unauthenticated",
        "--docs",
        "docs",
        cwd=tmp_path,
        data_dir=tmp_path / "data",
    ) as running:
        logs = running.logs()
        assert "WARNING" in logs and "NO authentication" in logs
        assert running.get("/health").json()["mode"] == "local"  # no token, full answer
        async with running.client() as client:
            listed = _structured(await client.call_tool("list_collections", {}))
            assert isinstance(listed["collections"], list)
    assert running.process.returncode is not None
