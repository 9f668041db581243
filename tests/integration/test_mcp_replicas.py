"""Two ``knowhub serve mcp --transport http`` replicas over one store, behind a load balancer
without sticky routing (:mod:`tests.round_robin`): any replica answers any request.

A client pinned to protocol 2026-07-28 sends self-contained requests, so its calls may land
anywhere; an older client (2025-11-25, ``initialize``) is answered without a session too.
In local mode the replicas share one data dir (SQLite) or one PostgreSQL store; in shared
mode one data dir, whose ``sessions.sqlite3`` tells every replica every registration.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from tests.helpers import WAIT_S, write
from tests.mcp_helpers import HttpServer, http_server, local_tools, text_of, wait_until
from tests.pg_server import PgServer
from tests.round_robin import RoundRobin, round_robin

pytestmark = pytest.mark.anyio

TOKEN = "replica-secret-Wq4z"
PG_URL_ENV = "KNOWHUB_TEST_PG_URL"
ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps(
        [{"name": "admin", "token_env": "KH_TEST_TOKEN", "sessions": ["*"]}]
    ),
    "KH_TEST_TOKEN": TOKEN,
}
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ZEBRA = "# Zebras\n\nThe zebra migrates across the savanna in great herds.\n"
VOLCANO = "# Volcanoes\n\nA volcano erupts molten rock and ash.\n"

Step = Callable[[Client], Awaitable[None]]


# -- what a client does through the load balancer -------------------------------------


async def lists_the_tools(client: Client) -> None:
    names = [t.name for t in (await client.list_tools()).tools]
    assert "query_knowledge_hub" in names and "search_docs" in names, names


async def searches_with_progress(client: Client) -> None:
    stages: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        stages.append(message or "")

    result = await client.call_tool(
        "query_knowledge_hub", {"query": "zebra savanna herds"}, progress_callback=progress
    )
    assert not result.is_error, text_of(result)
    assert _sources(result)[0] == "zebra.md"
    assert stages, "no progress notification came through"


async def a_bad_argument_is_a_tool_error(client: Client) -> None:
    result = await client.call_tool("query_knowledge_hub", {"query": "zebra", "top_k": 99})
    assert result.is_error and "top_k" in text_of(result), text_of(result)


async def listens_for_list_changes(client: Client) -> None:
    """2026-07-28's way to hear of changes (no standing GET stream): the stream opens."""
    async with client.listen(tools_list_changed=True) as subscription:
        assert subscription.honored is not None


async def reads_a_resource(client: Client) -> None:
    listed = (await client.list_resources()).resources
    (uri,) = [str(r.uri) for r in listed if r.name.endswith("zebra.md")]
    contents = (await client.read_resource(uri)).contents
    assert "savanna" in getattr(contents[0], "text", ""), contents


async def reads_around_a_hit(client: Client) -> None:
    found = await client.call_tool("query_knowledge_hub", {"query": "zebra savanna herds"})
    assert found.structured_content is not None, text_of(found)
    hit = found.structured_content["hits"][0]
    around = await client.call_tool("read_document", {"chunk_id": hit["chunk_id"], "after": 2})
    assert not around.is_error and "savanna" in text_of(around), text_of(around)


# A hook for what other parts of issue 39 add: append a step here and every test below runs
# it through both replicas.
ALTERNATING_STEPS: list[Step] = [
    lists_the_tools,
    searches_with_progress,
    a_bad_argument_is_a_tool_error,
    reads_a_resource,
    reads_around_a_hit,
]


async def on_every_replica(client: Client, proxy: RoundRobin, steps: list[Step]) -> None:
    """Run each step until both replicas answered its requests (twice at most per replica:
    the load balancer alternates, so a step of one request needs two runs)."""
    for step in steps:
        answered: set[str] = set()
        for _ in range(2 * len(proxy.upstreams)):
            before = len(proxy.served)
            await step(client)
            answered |= {s.upstream for s in proxy.served[before:]}
            if answered == set(proxy.upstreams):
                break
        assert answered == set(proxy.upstreams), f"{step.__name__}: only {answered} answered"


@asynccontextmanager
async def connect(url: str, mode: str) -> AsyncIterator[Client]:
    """The official client at ``url``: ``mode`` a protocol revision to pin, or "legacy"
    (``initialize``, the latest handshake revision). No response cache: every call is sent."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=WAIT_S) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client,
    ):
        yield client


def _sources(result: CallToolResult) -> list[str]:
    assert result.structured_content is not None, text_of(result)
    return [hit["source"] for hit in result.structured_content["hits"]]


def _indexed(server: HttpServer) -> bool:
    return server.get("/health").json().get("indexing") is False


# -- local mode -----------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def local_replicas(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[HttpServer, HttpServer]]:
    """Two local-mode replicas serving one folder: over one data dir (SQLite), or each
    with a data dir of its own over one PostgreSQL database."""
    write(tmp_path / "docs" / "zebra.md", ZEBRA)
    write(tmp_path / "docs" / "volcano.md", VOLCANO)
    env, data_dirs = dict(ENV), [tmp_path / "data"] * 2
    if request.param == "postgres":
        pg: PgServer = request.getfixturevalue("pg_server")
        env |= {
            "KNOWHUB_STORE__PROVIDER": "postgres",
            "KNOWHUB_STORE__POSTGRES__URL_ENV": PG_URL_ENV,
            PG_URL_ENV: pg.create_database(),
        }
        data_dirs = [tmp_path / "data-a", tmp_path / "data-b"]
    with ExitStack() as stack:
        a, b = (
            stack.enter_context(
                http_server("--docs", "docs", cwd=tmp_path, data_dir=d, env=env, token=TOKEN)
            )
            for d in data_dirs
        )
        for server in (a, b):
            wait_until(lambda server=server: _indexed(server))
        yield a, b


async def test_a_pinned_client_is_answered_by_either_local_replica(
    local_replicas: tuple[HttpServer, HttpServer], tmp_path: Path
) -> None:
    a, b = local_replicas
    with round_robin(a.url, b.url) as (url, proxy):
        async with connect(url + "/mcp", MODERN) as client:
            assert client.protocol_version == MODERN
            await on_every_replica(client, proxy, [*ALTERNATING_STEPS, listens_for_list_changes])
            listed = [t.name for t in (await client.list_tools()).tools]
            assert listed == await local_tools(tmp_path / "listed")
    assert proxy.upstreams_of("initialize") == set()  # 2026-07-28: no handshake at all


async def test_an_older_client_is_answered_without_a_session(
    local_replicas: tuple[HttpServer, HttpServer],
) -> None:
    a, b = local_replicas
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    opened = a.post("/mcp", json=initialize, headers=accept)
    assert opened.status_code == 200, opened.text
    assert "mcp-session-id" not in opened.headers  # nothing to pin the client to a replica
    # No standing stream either: GET says so, as the protocol has it (not an idle SSE).
    stream = httpx.get(
        a.url + "/mcp", headers={**a.headers(), "Accept": "text/event-stream"}, timeout=WAIT_S
    )
    assert (stream.status_code, stream.headers.get("allow")) == (405, "POST")
    async with connect(a.url + "/mcp", "legacy") as client:  # against one replica
        assert client.protocol_version == LEGACY
        for step in ALTERNATING_STEPS:
            await step(client)
    with round_robin(a.url, b.url) as (url, proxy):  # and through the load balancer
        async with connect(url + "/mcp", "legacy") as client:
            assert client.protocol_version == LEGACY
            await on_every_replica(client, proxy, ALTERNATING_STEPS)
    assert proxy.upstreams_of("initialize")


# -- shared mode ----------------------------------------------------------------------


@pytest.fixture
def shared_replicas(tmp_path: Path) -> Iterator[tuple[HttpServer, HttpServer]]:
    """Two shared-mode replicas over one data dir and one --path-root."""
    write(tmp_path / "root" / "alpha" / "zebra.md", ZEBRA)
    write(tmp_path / "root" / "beta" / "volcano.md", VOLCANO)
    args = ("--mode", "shared", "--path-root", str(tmp_path / "root"))
    with ExitStack() as stack:
        a, b = (
            stack.enter_context(
                http_server(*args, cwd=tmp_path, data_dir=tmp_path / "data", env=ENV, token=TOKEN)
            )
            for _ in range(2)
        )
        yield a, b


async def _call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with connect(url, MODERN) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


async def test_a_session_registered_on_one_replica_is_served_by_the_other(
    shared_replicas: tuple[HttpServer, HttpServer], tmp_path: Path
) -> None:
    a, b = shared_replicas
    data_dir = tmp_path / "data"
    sid = (await _call(a.url + "/mcp", "register", path="alpha"))["session_id"]
    listed = (await _call(b.url + "/mcp", "list"))["sessions"]
    assert [(s["session_id"], s["state"]) for s in listed] == [(sid, "Unloaded")]  # not on b yet
    health = [server.get("/health").json() for server in (a, b)]
    assert [(h["sessions"], h["loaded"]) for h in health] == [(1, 1), (1, 0)]
    async with connect(f"{b.url}/mcp/{sid}", MODERN) as client:
        await searches_with_progress(client)
    with round_robin(a.url, b.url) as (url, proxy):
        async with connect(f"{url}/mcp/{sid}", MODERN) as client:
            await on_every_replica(client, proxy, [*ALTERNATING_STEPS, listens_for_list_changes])

    gone = await _call(a.url + "/mcp", "unregister", session_id=sid)
    assert gone["session_id"] == sid
    assert (await _call(b.url + "/mcp", "list"))["sessions"] == []
    # b had it loaded: its next request for it is refused as for any unknown session, and
    # b unloads it (then, or at its next idle check), its index gone with it.
    refused = b.post(f"/mcp/{sid}", json={}, headers={"Accept": "application/json"})
    assert refused.status_code == 404, refused.text
    assert "register the folder" in refused.text
    assert f"session {sid} unregistered: unloading it" in b.logs()
    assert not (data_dir / "sessions" / sid).exists()


async def test_replicas_registering_one_folder_at_once_end_with_one_session(
    shared_replicas: tuple[HttpServer, HttpServer],
) -> None:
    a, b = shared_replicas
    results: list[dict[str, Any]] = []

    async def register(server: HttpServer) -> None:
        results.append(await _call(server.url + "/mcp", "register", path="beta"))

    async with anyio.create_task_group() as group:
        for server in (a, b):
            group.start_soon(register, server)
    assert len({r["session_id"] for r in results}) == 1, results
    assert {r["chunks_count"] for r in results} == {1}, results
    for server in (a, b):
        listed = (await _call(server.url + "/mcp", "list"))["sessions"]
        assert [s["session_id"] for s in listed] == [results[0]["session_id"]]
        async with connect(f"{server.url}/mcp/{results[0]['session_id']}", MODERN) as client:
            found = await client.call_tool("query_knowledge_hub", {"query": "volcano ash"})
            assert _sources(found) == ["volcano.md"]  # one copy, though both indexed it
