"""Shared mode over HTTP: sessions registered on /mcp, each with its own data plane.

Every test runs real ``knowhub serve mcp --transport http --mode shared`` processes (the
hashing embedder keeps them fast) and talks to them with the official SDK client.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp_types import CallToolResult

from tests.helpers import WAIT_S, write
from tests.mcp_helpers import HttpServer, eventually, http_server, shared_tools, text_of

pytestmark = pytest.mark.anyio

ADMIN = "admin-secret"
UNKNOWN_ID = "0123456789abcdef"
# An MCP initialize request, as a client's first POST sends it.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
STREAM_HEADERS = {"Accept": "application/json, text/event-stream"}
KANGAROO = "# Kangaroos\n\nThe kangaroo hops over the outback.\n"


def token_env(*extra: dict[str, Any]) -> dict[str, str]:
    """Server env: the admin token (every session) plus ``extra`` token specs."""
    specs: list[dict[str, Any]] = [{"name": "admin", "token_env": "TOK_ADMIN", "sessions": ["*"]}]
    specs.extend(extra)
    return {"KNOWHUB_SERVER__TOKENS": json.dumps(specs), "TOK_ADMIN": ADMIN}


def shared_server(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return http_server(
        "--mode",
        "shared",
        "--path-root",
        str(tmp_path / "root"),
        *args,
        cwd=tmp_path,
        data_dir=tmp_path / "data",
        env=env or token_env(),
        token=ADMIN,
    )


def animals(root: Path) -> None:
    """Folder ``alpha`` (zebra, giraffe) and folder ``beta`` (volcano)."""
    write(root / "alpha" / "zebra.md", "# Zebras\n\nThe zebra migrates across the savanna.\n")
    write(
        root / "alpha" / "notes" / "giraffe.md",
        "# Giraffes\n\nThe giraffe browses acacia leaves on tall trees.\n",
    )
    write(root / "beta" / "volcano.md", "# Volcanoes\n\nMagma erupts from the volcano crater.\n")


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool``; it must succeed. → its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text_of(result)}"
    assert result.structured_content is not None
    return result.structured_content


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    """Call ``tool``; it must be a tool error (not a protocol failure). → its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have failed: {text_of(result)}"
    return text_of(result)


async def sources(client: Client, query: str, **arguments: Any) -> list[str]:
    out = await ok(client, "query_knowledge_hub", query=query, **arguments)
    return [hit["source"] for hit in out["hits"]]


async def sessions(server: HttpServer, token: str | None = None) -> dict[str, dict[str, Any]]:
    async with server.client("/mcp", token) as control:
        out = await ok(control, "list")
    return {s["session_id"]: s for s in out["sessions"]}


def leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


async def assert_sdk_refused(server: HttpServer, path: str, token: str | None = None) -> None:
    """The SDK client cannot even initialize on ``path`` (the server answers 404)."""
    with pytest.raises(BaseException) as caught:  # the SDK wraps it in task groups
        async with server.client(path, token) as client:
            await client.list_tools()
    errors = list(leaves(caught.value))
    assert any(isinstance(e, MCPError) and "Not Found" in e.message for e in errors), errors


def raw_status(server: HttpServer, path: str, token: str | None = None) -> int:
    return server.post(path, token, json=INITIALIZE, headers=STREAM_HEADERS).status_code


def load_lines(server: HttpServer, session_id: str) -> list[str]:
    return re.findall(rf"session {session_id} loaded: [^\n]*", server.logs())


ProgressNote = tuple[float, float | None, str | None]


@dataclass
class _Shared:
    """The server of :class:`TestRegisterAndServeSessions`, with alpha and beta registered."""

    server: HttpServer
    tmp: Path  # holds root/ (--path-root), outside/ (where root/link leads) and data/
    registered: CallToolResult  # register alpha, with progress notifications
    progress: list[ProgressNote]
    beta: dict[str, Any]
    root: Path = field(init=False)
    alpha: dict[str, Any] = field(init=False)  # registered's structured content
    sid_a: str = field(init=False)
    sid_b: str = field(init=False)

    def __post_init__(self) -> None:
        self.root = self.tmp / "root"
        self.alpha = self.registered.structured_content or {}
        self.sid_a, self.sid_b = self.alpha.get("session_id", ""), self.beta["session_id"]


class TestRegisterAndServeSessions:
    """register, its refusals, the data planes, isolation, watching and unregister, on one
    server. Tests that change the sessions come after those that read them (pytest runs a
    class's tests in order); each also passes alone."""

    @pytest.fixture(scope="class")
    @classmethod
    def anyio_backend(cls) -> str:
        return "asyncio"  # class-scoped, so that the server below spans the class

    @pytest.fixture(scope="class")
    @classmethod
    async def shared(cls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[_Shared]:
        tmp = tmp_path_factory.mktemp("shared")
        root = tmp / "root"
        animals(root)
        (tmp / "outside").mkdir()
        write(tmp / "outside" / "secret.md", "# Secret\n\nOutside the root.\n")
        (root / "link").symlink_to(tmp / "outside", target_is_directory=True)
        progress: list[ProgressNote] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        with shared_server(tmp) as server:
            async with server.client("/mcp") as control:
                arguments = {"path": "alpha", "description": "animals"}
                registered = await control.call_tool(
                    "register", arguments, progress_callback=on_progress
                )
                beta = await ok(control, "register", path="beta")
            yield _Shared(server, tmp, registered, progress, beta)

    @pytest.fixture(scope="class")
    @classmethod
    async def fresh(cls, shared: _Shared) -> CallToolResult:
        """fresh/nested registered with create (once the test that it is missing ran)."""
        async with shared.server.client("/mcp") as control:
            return await control.call_tool("register", {"path": "fresh/nested", "create": True})

    async def test_the_control_plane_offers_register_unregister_and_list(
        self, shared: _Shared, tmp_path: Path
    ) -> None:
        async with shared.server.client("/mcp") as control:
            tools = [t.name for t in (await control.list_tools()).tools]
        assert tools == (await shared_tools(tmp_path))[1]  # pinned in test_mcp_memory.py

    async def test_register_indexes_a_relative_folder_with_progress(self, shared: _Shared) -> None:
        result, alpha, sid_a = shared.registered, shared.alpha, shared.sid_a
        progress = shared.progress
        assert not result.is_error, text_of(result)
        assert result.structured_content is not None
        assert re.fullmatch(r"[0-9a-f]{16}", sid_a)
        assert alpha["path"] == str((shared.root / "alpha").resolve())
        assert Path(alpha["path"]).is_absolute()
        assert alpha["relative_path"] == "alpha"
        assert alpha["chunks_count"] >= 2
        assert alpha["endpoint"] == f"/mcp/{sid_a}"
        assert sid_a in text_of(result)
        assert progress, "no progress notification arrived"
        assert [p[0] for p in progress] == sorted({p[0] for p in progress})  # rising
        assert progress[-1][0] == progress[-1][1]  # every chunk of the 2 files embedded
        assert (progress[-1][2] or "").startswith("ingesting: ") and "2/2 files" in (
            progress[-1][2] or ""
        )

    async def test_the_same_folder_spelled_differently_is_the_same_session(
        self, shared: _Shared
    ) -> None:
        async with shared.server.client("/mcp") as control:
            again = await ok(control, "register", path="./alpha/")
        assert again["session_id"] == shared.sid_a
        assert again["chunks_count"] == shared.alpha["chunks_count"]
        assert shared.sid_b != shared.sid_a
        assert shared.beta["chunks_count"] >= 1

    async def test_a_missing_folder_is_refused_naming_the_near_miss(self, shared: _Shared) -> None:
        # Such a folder was once created, empty, silently: a typo gave a session whose every
        # search found nothing.
        root = shared.root
        async with shared.server.client("/mcp") as control:
            message = await fails(control, "register", path="alpah")
            assert f"path 'alpah' does not exist under --path-root {root.resolve()}" in message
            assert "(did you mean 'alpha'?)" in message and "create=true" in message
            assert not (root / "alpah").exists()
            message = await fails(control, "register", path="fresh/nested")
            assert "does not exist" in message and "did you mean" not in message

    async def test_create_makes_the_missing_folder_and_says_so(
        self, shared: _Shared, fresh: CallToolResult
    ) -> None:
        created = fresh.structured_content
        assert not fresh.is_error and created is not None, text_of(fresh)
        assert (created["chunks_count"], created["created"]) == (0, True)
        assert "the folder did not exist and was created, empty" in text_of(fresh)
        assert (shared.root / "fresh" / "nested").is_dir()
        async with shared.server.client("/mcp") as control:
            assert (await ok(control, "register", path="alpha", create=True))["created"] is False

    async def test_paths_leaving_the_root_or_empty_are_refused(self, shared: _Shared) -> None:
        tmp = shared.tmp
        async with shared.server.client("/mcp") as control:
            message = await fails(control, "register", path="../escape")
            assert "'..'" in message
            assert not (tmp / "escape").exists()
            message = await fails(control, "register", path="/etc")
            assert "absolute" in message and "--path-root" in message
            message = await fails(control, "register", path="link")
            assert "outside the document root" in message
            message = await fails(control, "register", path="link/deeper")
            assert "outside the document root" in message
            assert not (tmp / "outside" / "deeper").exists()
            message = await fails(control, "register", path="")
            assert "path" in message and "at least 1 character" in message
            message = await fails(control, "register", path="   ")
            assert "path is empty" in message

    async def test_list_shows_every_session_loaded(
        self, shared: _Shared, fresh: CallToolResult
    ) -> None:
        assert fresh.structured_content is not None
        async with shared.server.client("/mcp") as control:
            listed = {s["session_id"]: s for s in (await ok(control, "list"))["sessions"]}
        assert set(listed) == {shared.sid_a, shared.sid_b, fresh.structured_content["session_id"]}
        assert listed[shared.sid_a]["description"] == "animals"
        assert all(s["state"] == "Loaded" for s in listed.values())

    async def test_a_session_serves_every_data_tool(self, shared: _Shared, tmp_path: Path) -> None:
        async with shared.server.client(f"/mcp/{shared.sid_a}") as data:
            tools = [t.name for t in (await data.list_tools()).tools]
            assert tools == (await shared_tools(tmp_path))[0]
            result = await data.call_tool("query_knowledge_hub", {"query": "zebra savanna"})
            assert not result.is_error, text_of(result)
            assert result.structured_content is not None
            top = result.structured_content["hits"][0]
            assert top["source"] == "zebra.md"
            assert top["n"] == 1 and top["line_start"] >= 1 and top["line_end"] >= top["line_start"]
            assert "**[1]** zebra.md" in text_of(result)
            assert f"chunk `{top['chunk_id']}`" in text_of(result)
            found = await ok(data, "search_docs", query="giraffe acacia")
            assert found["hits"][0]["source"] == "notes/giraffe.md"
            collections = (await ok(data, "list_collections"))["collections"]
            assert [(c["name"], c["documents"]) for c in collections] == [("default", 2)]
            summary = await ok(data, "get_document_summary", source_hash=top["source_hash"][:12])
            assert summary["source"] == "zebra.md"
            assert summary["chunk_count"] >= 1
            content = await ok(data, "get_content", chunk_id=top["chunk_id"])
            assert "zebra migrates" in content["text"]
            assert content["source"] == "zebra.md"

    async def test_ingest_paths_are_relative_to_the_session_folder(self, shared: _Shared) -> None:
        write(
            shared.root / "alpha" / "extra" / "koala.md", "# Koalas\n\nThe koala eats eucalyptus.\n"
        )
        async with shared.server.client(f"/mcp/{shared.sid_a}") as data:
            ingested = await ok(data, "ingest", path="extra", collection="marsupials")
            assert ingested["added"] == ["koala.md"] or ingested["added"] == ["extra/koala.md"]
            hits = await sources(data, "koala eucalyptus", collection="marsupials")
            assert hits == ingested["added"]
            # … and may not leave it.
            message = await fails(data, "ingest", path="../beta")
            assert "'..'" in message

    async def test_a_file_dropped_into_the_folder_becomes_searchable_without_reload(
        self, shared: _Shared
    ) -> None:
        server = shared.server
        write(shared.root / "alpha" / "late.md", KANGAROO)
        async with server.client(f"/mcp/{shared.sid_a}") as data:

            async def kangaroo_found() -> bool:
                return "late.md" in await sources(data, "kangaroo outback")

            await eventually(kangaroo_found)
            assert len(load_lines(server, shared.sid_a)) == 1, server.logs()

    async def test_sessions_see_none_of_each_others_documents(self, shared: _Shared) -> None:
        async with shared.server.client(f"/mcp/{shared.sid_b}") as data_b:
            assert "volcano.md" in await sources(data_b, "volcano magma")
            b_sources = await sources(data_b, "zebra savanna giraffe kangaroo")
            assert b_sources and not {"zebra.md", "notes/giraffe.md", "late.md"} & set(b_sources)
            collections = (await ok(data_b, "list_collections"))["collections"]
            assert [(c["name"], c["documents"]) for c in collections] == [("default", 1)]
        async with shared.server.client(f"/mcp/{shared.sid_a}") as data:
            assert "volcano.md" not in await sources(data, "volcano magma crater")

    async def test_an_unknown_session_is_not_found(self, shared: _Shared) -> None:
        # 404 on the raw route, and the SDK client cannot use it.
        server = shared.server
        assert raw_status(server, f"/mcp/{shared.sid_a}") == 200
        response = server.post(f"/mcp/{UNKNOWN_ID}", json=INITIALIZE, headers=STREAM_HEADERS)
        assert response.status_code == 404
        assert "unknown session" in response.json()["error"]
        await assert_sdk_refused(server, f"/mcp/{UNKNOWN_ID}")

    async def test_unregister_forgets_a_session_and_its_index(
        self, shared: _Shared, fresh: CallToolResult
    ) -> None:
        server, sid_a, sid_b = shared.server, shared.sid_a, shared.sid_b
        assert fresh.structured_content is not None
        index_b = shared.tmp / "data" / "sessions" / sid_b
        assert index_b.is_dir()
        async with server.client("/mcp") as control:
            gone = await ok(control, "unregister", session_id=sid_b)
            assert gone == {"session_id": sid_b, "path": str((shared.root / "beta").resolve())}
            listed = {s["session_id"] for s in (await ok(control, "list"))["sessions"]}
            assert listed == {sid_a, fresh.structured_content["session_id"]}
            message = await fails(control, "unregister", session_id=sid_b)
            assert "unknown session" in message
            message = await fails(control, "unregister", session_id=UNKNOWN_ID)
            assert "unknown session" in message and UNKNOWN_ID in message
        assert raw_status(server, f"/mcp/{sid_b}") == 404
        await assert_sdk_refused(server, f"/mcp/{sid_b}")
        assert (shared.root / "beta" / "volcano.md").exists()  # the folder itself is kept
        assert not index_b.exists()  # "forget a session and its index"
        # The server kept serving through all of it.
        async with server.client(f"/mcp/{sid_a}") as data:
            assert (await sources(data, "zebra"))[0] == "zebra.md"


def idle_unloads(server: HttpServer, sid: str) -> int:
    """How often the reaper has unloaded session ``sid`` (it logs first, then unloads)."""
    return server.logs().count(f"session {sid} idle: unloading")


async def test_idle_sessions_unload_and_reload_with_changes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    animals(root)
    # 2 s idle is the setting under test: what a test sees before it runs out is checked
    # only when the reaper has not come yet (a loaded machine can take longer than that).
    with shared_server(tmp_path, "--idle-timeout", "2s") as server:
        before = int(time.time())
        async with server.client("/mcp") as control:
            registered = await ok(control, "register", path="alpha", description="animals")
        sid = registered["session_id"]

        # 4. list: Loaded, chunks, last access (UTC, just now).
        row = (await sessions(server))[sid]
        health = server.get("/health").json()
        if idle_unloads(server, sid) == 0:  # the reaper logs before it unloads
            assert row["state"] == "Loaded" and (health["sessions"], health["loaded"]) == (1, 1)
        assert row["chunks_count"] == registered["chunks_count"] >= 2
        stamp = calendar.timegm(time.strptime(row["last_access"], "%Y-%m-%dT%H:%M:%SZ"))
        assert before <= stamp <= time.time()
        assert server.get("/health", token="").json() == {"status": "ok"}

        # Idle past the timeout: unloaded, and /health counts it so.
        async def unloaded() -> bool:
            return bool((await sessions(server))[sid]["state"] == "Unloaded")

        await eventually(unloaded)
        row = (await sessions(server))[sid]
        assert row["chunks_count"] == registered["chunks_count"]  # as stored: it showed "?"
        async with server.client("/mcp") as control:
            listing = text_of(await control.call_tool("list", {}))
        assert f"- {sid} Unloaded {row['path']} — animals ({row['chunks_count']} chunks, " in (
            listing
        )
        health = server.get("/health").json()
        assert (health["sessions"], health["loaded"]) == (1, 0)
        assert f"session {sid} idle: unloading" in server.logs()

        # Changes while unloaded (no watcher runs): a new file, an edited one.
        write(root / "alpha" / "late.md", KANGAROO)
        write(root / "alpha" / "zebra.md", "# Okapis\n\nThe okapi hides in the rainforest.\n")

        # The next data-plane call reloads the session, re-syncing the folder.
        async with server.client(f"/mcp/{sid}") as data:
            assert (await sources(data, "kangaroo outback"))[0] == "late.md"
            row = (await sessions(server))[sid]
            health = server.get("/health").json()
            if idle_unloads(server, sid) == 1:  # not idle again yet
                assert row["state"] == "Loaded" and health["loaded"] == 1
            assert (await sources(data, "okapi rainforest"))[0] == "zebra.md"
            assert (await sources(data, "giraffe acacia"))[0] == "notes/giraffe.md"
            summary = (await ok(data, "list_collections"))["collections"][0]
            assert summary["documents"] == 3
        lines = load_lines(server, sid)
        assert len(lines) == 2, lines
        assert "1 added, 1 updated, 0 removed, 1 unchanged" in lines[1], lines


async def test_sessions_persist_across_restarts_and_tokens_limit_them(tmp_path: Path) -> None:
    root = tmp_path / "root"
    animals(root)
    with shared_server(tmp_path) as first:
        async with first.client("/mcp") as control:
            alpha = await ok(control, "register", path="alpha")
            beta = await ok(control, "register", path="beta")
    sid_a, sid_b = alpha["session_id"], beta["session_id"]
    with closing(sqlite3.connect(tmp_path / "data" / "sessions.sqlite3")) as db:
        stored = {row[0] for row in db.execute("SELECT session_id FROM sessions")}
    assert stored == {sid_a, sid_b}

    env = {
        **token_env(
            {"name": "limited", "token_env": "TOK_LIMITED", "sessions": [sid_a]},
            {"name": "reader", "token_env": "TOK_READER", "read_only": True},
        ),
        "TOK_LIMITED": "limited-secret",
        "TOK_READER": "reader-secret",
    }
    with shared_server(tmp_path, env=env) as server:
        # 6. persistence: the sessions are back, unloaded until used.
        listed = await sessions(server)
        assert set(listed) == {sid_a, sid_b}
        assert {s["state"] for s in listed.values()} == {"Unloaded"}
        assert listed[sid_a]["path"] == alpha["path"]

        async with server.client(f"/mcp/{sid_a}") as data:
            assert (await sources(data, "zebra savanna"))[0] == "zebra.md"
        # The stored index was reused: nothing re-embedded.
        assert load_lines(server, sid_a) == [
            f"session {sid_a} loaded: 0 added, 0 updated, 0 removed, 2 unchanged"
        ], server.logs()
        assert load_lines(server, sid_b) == []  # loaded lazily, not on start
        listed = await sessions(server)
        assert (listed[sid_a]["state"], listed[sid_b]["state"]) == ("Loaded", "Unloaded")
        assert listed[sid_a]["chunks_count"] == alpha["chunks_count"]

        # 8. a token limited to session A reaches only A (and no control tool: see below).
        async with server.client(f"/mcp/{sid_a}", "limited-secret") as data:
            assert (await sources(data, "giraffe"))[0] == "notes/giraffe.md"
        assert raw_status(server, f"/mcp/{sid_b}", "limited-secret") == 404
        assert raw_status(server, f"/mcp/{sid_b}") == 200  # B exists: the 404 is the token's
        await assert_sdk_refused(server, f"/mcp/{sid_b}", "limited-secret")
        async with server.client("/mcp", "limited-secret") as control:
            assert "limited to sessions" in await fails(control, "unregister", session_id=sid_b)
        assert set(await sessions(server)) == {sid_a, sid_b}

        # A read-only token reads but may not register, unregister or ingest.
        async with server.client("/mcp", "reader-secret") as control:
            assert [t.name for t in (await control.list_tools()).tools] == ["list"]
            rows = (await ok(control, "list"))["sessions"]
            assert {row["session_id"] for row in rows} == {sid_a, sid_b}
            assert "read-only" in await fails(control, "register", path="gamma")
            assert "read-only" in await fails(control, "unregister", session_id=sid_a)
        assert not (root / "gamma").exists()
        assert set(await sessions(server)) == {sid_a, sid_b}
        async with server.client(f"/mcp/{sid_b}", "reader-secret") as data:
            assert (await sources(data, "volcano"))[0] == "volcano.md"
            assert "read-only" in await fails(data, "ingest", path=".")

        # /metrics: both sessions' index sizes, but to the token limited to A only A's.
        assert f'collection="{sid_b}/default"' in server.get("/metrics").text
        scoped = server.get("/metrics", "limited-secret").text
        assert f'collection="{sid_a}/default"' in scoped and sid_b not in scoped

        # No (or a wrong) token: 401 everywhere, the same for existing and unknown sessions.
        answers = []
        for path in ("/mcp", f"/mcp/{sid_a}", f"/mcp/{UNKNOWN_ID}"):
            for token in ("", "wrong-secret"):
                response = server.post(path, token, json=INITIALIZE, headers=STREAM_HEADERS)
                assert response.status_code == 401, (path, token, response.text)
                answers.append((response.text, response.headers.get("www-authenticate")))
        assert len(set(answers)) == 1, answers
        assert answers[0][1] == 'Bearer realm="knowhub"'
        assert sid_a not in answers[0][0]
        assert server.get("/health", token="").json() == {"status": "ok"}


async def test_a_session_token_may_not_use_the_control_tools(tmp_path: Path) -> None:
    # Limited to one session, `register beta` handed it beta's id (and list/unregister
    # reached the control plane too).
    root = tmp_path / "root"
    animals(root)
    env = {
        **token_env({"name": "limited", "token_env": "TOK_LIMITED", "sessions": [UNKNOWN_ID]}),
        "TOK_LIMITED": "limited-secret",
    }
    with shared_server(tmp_path, env=env) as server:
        async with server.client("/mcp") as control:
            sid_b = (await ok(control, "register", path="beta"))["session_id"]
        async with server.client("/mcp", "limited-secret") as control:
            assert (await control.list_tools()).tools == []  # none offered …
            for tool, arguments in [
                ("register", {"path": "beta"}),
                ("register", {"path": "gamma"}),
                ("list", {}),
                ("unregister", {"session_id": sid_b}),
                ("unregister", {"session_id": UNKNOWN_ID}),
            ]:
                message = await fails(control, tool, **arguments)
                assert f"token 'limited' is limited to sessions, so it may not call '{tool}'" in (
                    message
                )
                assert "sessions ['*'] in server.tokens" in message  # the fix
                assert sid_b not in message
        assert not (root / "gamma").exists()
        assert set(await sessions(server)) == {sid_b}
        # … and /health tells it no session count, nor the chunks of others' sessions.
        health = server.get("/health", "limited-secret").json()
        assert "sessions" not in health and "loaded" not in health, health
        assert health["chunks"] == 0 and health["collections"] == 0, health
        assert server.get("/health").json()["sessions"] == 1


async def test_register_errors_name_the_path_and_the_fix(tmp_path: Path) -> None:
    # `register "\x00"` and a symlink loop answered only "Error executing tool register".
    root = tmp_path / "root"
    animals(root)
    (root / "loop").symlink_to(root / "loop")
    with shared_server(tmp_path) as server:
        async with server.client("/mcp") as control:
            message = await fails(control, "register", path="\x00")
            assert "path '\\x00' contains a NUL character: give a plain path" in message
            for path in ("loop", "loop/deeper"):
                message = await fails(control, "register", path=path)
                assert f"path '{path}' cannot be resolved (" in message
                assert "fix or remove the symlink" in message
            message = await fails(control, "register", path="alpha/zebra.md")
            assert "path 'alpha/zebra.md': cannot use" in message and "not a file" in message
            assert (await ok(control, "register", path="alpha"))["chunks_count"] >= 2


@pytest.mark.timeout(3 * WAIT_S)  # register blocked on the FIFO forever
async def test_sessions_serve_no_file_from_outside_the_folder_and_skip_fifos(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    animals(root)
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "The vault combination is 4711.\n")
    write(outside / "folder" / "vault.md", "# Vault\n\nThe vault key 4711 hangs by the door.\n")
    alpha = root / "alpha"
    (alpha / "leak.txt").symlink_to(outside / "secret.txt")
    (alpha / "away").symlink_to(outside / "folder", target_is_directory=True)
    os.mkfifo(alpha / "x.txt")

    async def no_secret(data: Client) -> None:
        out = await ok(data, "query_knowledge_hub", query="vault combination key 4711", top_k=20)
        assert all("4711" not in hit["text"] for hit in out["hits"]), out["hits"]

    with shared_server(tmp_path) as server:
        async with server.client("/mcp") as control:
            sid = (await ok(control, "register", path="alpha"))["session_id"]
        async with server.client(f"/mcp/{sid}") as data:
            await no_secret(data)
            ingested = await ok(data, "ingest", path=".")
            reasons = {s["source"]: s["reason"] for s in ingested["skipped"]}
            assert set(reasons) == {"leak.txt", "away", "x.txt"}
            assert reasons["leak.txt"].startswith(f"leak.txt: leads outside {alpha.resolve()}")
            assert reasons["x.txt"].startswith("x.txt: is a FIFO (named pipe)")
            # The watcher's re-sync: a link added later is skipped, a new file comes in.
            (alpha / "late-leak.txt").symlink_to(outside / "secret.txt")
            write(alpha / "late.md", KANGAROO)

            async def kangaroo_found() -> bool:
                return "late.md" in await sources(data, "kangaroo outback")

            await eventually(kangaroo_found)
            await no_secret(data)
        logs = server.logs()
        assert f"session {sid}: skipped leak.txt: leads outside" in logs
        assert f"session {sid}: skipped x.txt: is a FIFO (named pipe)" in logs
        assert f"session {sid}: skipped late-leak.txt: leads outside" in logs


async def test_a_token_with_a_data_scope_may_not_use_the_control_tools(tmp_path: Path) -> None:
    scoped = {"name": "acme", "token_env": "TOK_ACME", "tenants": ["acme"], "sessions": ["*"]}
    env = {**token_env(scoped), "TOK_ACME": "acme-Zq81mT4vR6pLx2"}
    animals(tmp_path / "root")
    with shared_server(tmp_path, env=env) as server:
        async with server.client("/mcp") as control:
            registered = await control.call_tool("register", {"path": "alpha"})
            sid = registered.structured_content["session_id"]  # type: ignore[index]
        async with server.client("/mcp", token="acme-Zq81mT4vR6pLx2") as control:
            for tool, args in (("list", {}), ("unregister", {"session_id": sid})):
                result = await control.call_tool(tool, args)
                text = result.content[0].text  # type: ignore[union-attr]
                assert result.is_error and "has a data scope" in text, tool
        async with server.client("/mcp") as control:  # the session is still there
            listed = await control.call_tool("list", {})
            assert sid in listed.content[0].text  # type: ignore[union-attr]
