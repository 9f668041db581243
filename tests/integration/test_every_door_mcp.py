"""Every MCP tool refuses a token without rights, and tells it nothing.

The doors: every MCP tool (read from ``build_local`` and ``build_shared`` with every
optional tool on), and the MCP servers' own routes besides the tools (/health, /metrics).
The data dir, the three tokens and what each door must do or not do:
:mod:`tests.door_helpers`.

The tables below say how to knock on each door; which doors there are comes from the
servers. A door no table covers fails the coverage tests, named: a new surface cannot slip
in without a probe. Real servers (one per module), real data dirs made by ``knowhub``.

MCP over stdio serves ``build_local``'s tools to the data dir's owner (no tokens there): its
tools are probed over HTTP, where tokens apply. Shared mode's control tools (register,
unregister, list) concern whole sessions, every collection in them: they must refuse a token
limited to some collections as they refuse a read-only one (``list`` may instead count only
what the token may read, as /health does).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import ServeOptions, build_local, build_shared
from tests.door_helpers import (
    BOARD_TEXT,
    FULL,
    KB_ONLY,
    KB_TEXT,
    NAMES,
    PRIVATE_NAME,
    PRIVATE_QUERY,
    READ_ONLY,
    READER,
    REFUSED,
    SECRET,
    TOKEN_ENV,
    around,
    build_corpus,
    expect,
)
from tests.helpers import fast_settings, write
from tests.mcp_helpers import HttpServer, http_server, text_of, wait_until

# -- the data dir ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The doors' corpus (:func:`tests.door_helpers.build_corpus`), built once here."""
    return build_corpus(tmp_path_factory)


# -- the MCP tools -----------------------------------------------------------------------


async def _names(server: MCPServer) -> set[str]:
    return {tool.name for tool in await server.list_tools()}


@pytest.fixture(scope="module")
def mcp_tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """The tools each build registers, every optional one on (``search_docs``, and the
    writing tools of a server that is not read-only): ``local`` (stdio and HTTP serve the
    same build), ``shared`` (a session's data tools) and ``control`` (shared mode's /mcp)."""
    root = tmp_path_factory.mktemp("tools")
    (root / "docs").mkdir()
    settings = fast_settings(root / "data", **{"server.search_docs_tool": True})
    server, service = build_local(settings, ServeOptions(docs=root / "docs"), Metrics())
    try:
        local = anyio.run(_names, server)
    finally:
        service.close()
    options = ServeOptions(transport="http", mode="shared", path_root=root, read_only=False)
    data, control, registry = build_shared(settings, options, Metrics())
    try:
        return {
            "local": local,
            "shared": anyio.run(_names, data),
            "control": anyio.run(_names, control),
        }
    finally:
        registry.close()


@dataclass
class McpDoor:
    """A running MCP server, where its tools are, and the ids their probes use."""

    server: HttpServer
    path: str  # /mcp, or a session's /mcp/<id>
    ids: dict[str, str]
    clients: dict[str, Client] = field(default_factory=dict)  # by token, while probing

    async def call(self, token: str, tool: str, **arguments: Any) -> CallToolResult:
        return await self.clients[token].call_tool(tool, arguments)


McpProbe = Callable[[McpDoor], Awaitable[None]]


async def _refused(door: McpDoor, token: str, tool: str, why: str, **arguments: Any) -> None:
    """``tool`` called as ``token`` is a tool error saying ``why``, with nothing private."""
    result = await door.call(token, tool, **arguments)
    text = text_of(result) + json.dumps(result.structured_content)
    who = f"{tool}({arguments}) as {NAMES[token]}"
    expect(result.is_error, f"{who} was not refused: {text[:400]}")
    expect(why in text, f"{who}: refused without saying why ({why!r}): {text[:400]}")
    expect(SECRET not in text, f"{who} shows the private document: {around(text, SECRET)}")


async def _quiet(door: McpDoor, tool: str, **arguments: Any) -> CallToolResult:
    """``tool`` called as ``kbonly`` shows nothing of ``private``, not even its name."""
    result = await door.call(KB_ONLY, tool, **arguments)
    text = text_of(result) + json.dumps(result.structured_content)
    who = f"{tool}({arguments}) as kbonly"
    expect(SECRET not in text, f"{who} shows the private document: {around(text, SECRET)}")
    expect(not PRIVATE_NAME.search(text), f"{who} names it: {around(text, 'private')}")
    return result


async def _search_docs(door: McpDoor) -> None:
    """``search_docs`` names no collection: ``kbonly``'s default is ``kb``, nothing else."""
    result = await _quiet(door, "search_docs", query=PRIVATE_QUERY)
    hits = (result.structured_content or {}).get("hits", [])
    expect(not result.is_error and all(h["collection"] == "kb" for h in hits), text_of(result))


async def _list_collections(door: McpDoor) -> None:
    result = await _quiet(door, "list_collections")
    names = [c["name"] for c in (result.structured_content or {}).get("collections", [])]
    expect(names == ["kb"], f"list_collections as kbonly lists {names}")


async def _get_content(door: McpDoor) -> None:
    """A chunk of ``private`` reads as no chunk at all (nothing to probe)."""
    result = await _quiet(door, "get_content", chunk_id=door.ids["private_chunk"])
    expect(result.is_error and "no chunk" in text_of(result), text_of(result)[:400])


async def _summary(door: McpDoor) -> None:
    source_hash = door.ids["private_doc"]
    await _refused(
        door,
        KB_ONLY,
        "get_document_summary",
        REFUSED,
        source_hash=source_hash,
        collection="private",
    )
    result = await _quiet(door, "get_document_summary", source_hash=source_hash)  # kb's
    expect(result.is_error, f"kb holds no such document: {text_of(result)[:400]}")


async def _read_document(door: McpDoor) -> None:
    """A chunk of ``private`` reads as no chunk; its document, asked in ``private``, is
    refused, and in ``kb`` is not there."""
    result = await _quiet(door, "read_document", chunk_id=door.ids["private_chunk"])
    expect(result.is_error and "no chunk" in text_of(result), text_of(result)[:400])
    document = door.ids["private_doc"]
    await _refused(door, KB_ONLY, "read_document", REFUSED, document=document, collection="private")
    result = await _quiet(door, "read_document", document=document)  # kb's
    expect(result.is_error, f"kb holds no such document: {text_of(result)[:400]}")


async def _mcp_state(door: McpDoor) -> list[Any]:
    """What an ingest would change, read as ``full``: the collections' sizes, and whether
    the reader's probe tag (``probe=reader``) got onto ``kb``'s documents."""
    listed = await door.call(FULL, "list_collections")
    tagged = await door.call(
        FULL, "query_knowledge_hub", query="backups", collection="kb", filters={"probe": "reader"}
    )
    hits = None if tagged.is_error else len((tagged.structured_content or {})["hits"])
    return [(listed.structured_content or {}).get("collections"), hits]


async def _ingest(door: McpDoor) -> None:
    """``kbonly`` may not ingest into ``private``, ``reader`` not at all; nothing changes."""
    before = await _mcp_state(door)
    path = door.ids["ingest_path"]
    await _refused(door, KB_ONLY, "ingest", REFUSED, path=path, collection="private")
    await _refused(
        door, READER, "ingest", READ_ONLY, path=path, collection="kb", tags={"probe": "reader"}
    )
    after = await _mcp_state(door)
    expect(before == after, f"a refused ingest changed the data: {before} → {after}")


DATA_TOOL_PROBES: dict[str, McpProbe] = {
    "query_knowledge_hub": lambda d: _refused(
        d, KB_ONLY, "query_knowledge_hub", REFUSED, query=PRIVATE_QUERY, collection="private"
    ),
    "search_docs": _search_docs,
    "list_collections": _list_collections,
    "get_document_summary": _summary,
    "get_content": _get_content,
    "read_document": _read_document,
    "ask": lambda d: _refused(
        d, KB_ONLY, "ask", REFUSED, question="When does the merger close?", collection="private"
    ),
    "ingest": _ingest,
}
"""How ``kbonly`` asks each data tool (local mode's, a shared session's) for ``private``."""


async def _sessions(door: McpDoor) -> list[tuple[str, str]]:
    listed = (await door.call(FULL, "list")).structured_content or {}
    return sorted((s["session_id"], s["path"]) for s in listed["sessions"])


async def _register(door: McpDoor) -> None:
    """A session indexes its folder into the configured collection (``private`` here): not
    for ``reader``, nor for ``kbonly``, which may not read it."""
    before = await _sessions(door)
    await _refused(door, READER, "register", "'reader'", path="board3")
    await _refused(door, KB_ONLY, "register", "'kbonly'", path="board3")
    after = await _sessions(door)
    expect(before == after, f"a refused register changed the sessions: {before} → {after}")


async def _unregister(door: McpDoor) -> None:
    """Unregistering deletes a session's index (``private`` in it): not for ``reader``, nor
    for ``kbonly``."""
    before = await _sessions(door)
    await _refused(door, READER, "unregister", "'reader'", session_id=door.ids["board2"])
    await _refused(door, KB_ONLY, "unregister", "'kbonly'", session_id=door.ids["board2"])
    after = await _sessions(door)
    expect(before == after, f"a refused unregister changed the sessions: {before} → {after}")


async def _list(door: McpDoor) -> None:
    """``list`` as ``kbonly``: refused, or each session's size as far as it may read it (as
    /health counts a limited token's collections only), never the whole index's."""
    result = await _quiet(door, "list")
    if result.is_error:
        return
    readable = json.loads(door.ids["kb_chunks"])
    for session in (result.structured_content or {})["sessions"]:
        sid, shown = session["session_id"], session["chunks_count"]
        expect(
            shown in (None, readable[sid]),
            f"list as kbonly counts {shown} chunks in session {sid} ({session['path']}), "
            f"of which it may read {readable[sid]}: the rest are private's",
        )


CONTROL_TOOL_PROBES: dict[str, McpProbe] = {
    "register": _register,
    "unregister": _unregister,
    "list": _list,
}
"""How ``kbonly`` and ``reader`` knock on shared mode's control tools (on /mcp)."""
BUILD_PROBES = {
    "local": DATA_TOOL_PROBES,
    "shared": DATA_TOOL_PROBES,
    "control": CONTROL_TOOL_PROBES,
}


async def _private_ids(door: McpDoor) -> None:
    """The chunk and document of the private minutes, as ``full`` finds them."""
    async with door.server.client(door.path, FULL) as client:
        found = await client.call_tool(
            "query_knowledge_hub", {"query": PRIVATE_QUERY, "collection": "private", "top_k": 10}
        )
    hits = (found.structured_content or {}).get("hits", [])
    (hit,) = [h for h in hits if h["source"].endswith("minutes.md")] or [None]
    assert hit is not None, text_of(found)
    door.ids.update(private_chunk=hit["chunk_id"], private_doc=hit["source_hash"])


@pytest.fixture(scope="module")
def mcp_local(corpus: Path) -> Iterator[McpDoor]:
    """``serve mcp --transport http`` in local mode serving ``kbdocs`` (indexed as ``kb``)
    on a copy of the corpus' data dir, the three tokens."""
    env = {**TOKEN_ENV, "KNOWHUB_SERVER__SEARCH_DOCS_TOOL": "true"}
    data = corpus / "mcp-data"
    with http_server("--docs", "kbdocs", cwd=corpus, data_dir=data, env=env) as server:
        wait_until(lambda: server.get("/health", FULL).json().get("indexing") is False)
        door = McpDoor(server, "/mcp", {"ingest_path": "notes.md"})
        anyio.run(_private_ids, door)
        yield door


async def _register_sessions(server: HttpServer, ids: dict[str, str]) -> None:
    """``full`` registers board and board2 (indexed into ``private``), and ingests board's
    kbnote.md into ``kb`` too; how many chunks of ``kb`` each session holds."""
    async with server.client("/mcp", FULL) as control:
        for name in ("board", "board2"):
            made = await control.call_tool("register", {"path": name})
            assert not made.is_error, text_of(made)
            ids[name] = (made.structured_content or {})["session_id"]
    kb_chunks = {}
    for name in ("board", "board2"):
        async with server.client(f"/mcp/{ids[name]}", FULL) as data:
            if name == "board":
                added = await data.call_tool("ingest", {"path": "kbnote.md", "collection": "kb"})
                assert not added.is_error, text_of(added)
            listed = (await data.call_tool("list_collections", {})).structured_content or {}
            kb_chunks[ids[name]] = sum(
                c["chunks"] for c in listed["collections"] if c["name"] == "kb"
            )
    ids["kb_chunks"] = json.dumps(kb_chunks)


@pytest.fixture(scope="module")
def mcp_shared(corpus: Path) -> Iterator[tuple[McpDoor, McpDoor]]:
    """``serve mcp --mode shared`` with ``collection: private`` and the three tokens:
    session board (``private``, and ``kb`` holding kbnote.md) and board2 (``private``);
    its control door (/mcp) and board's data door."""
    shared = corpus / "shared"
    write(shared / "board" / f"{SECRET}-minutes.md", BOARD_TEXT)
    write(shared / "board" / "kbnote.md", KB_TEXT)
    write(shared / "board2" / f"{SECRET}-notes.md", BOARD_TEXT)
    write(shared / "board3" / f"{SECRET}-more.md", BOARD_TEXT)
    env = {**TOKEN_ENV, "KNOWHUB_COLLECTION": "private", "KNOWHUB_SERVER__SEARCH_DOCS_TOOL": "true"}
    args = ("--mode", "shared", "--path-root", str(shared))
    with http_server(*args, cwd=corpus, data_dir=corpus / "shared-data", env=env) as server:
        ids: dict[str, str] = {}
        anyio.run(_register_sessions, server, ids)
        session = McpDoor(server, f"/mcp/{ids['board']}", {**ids, "ingest_path": "kbnote.md"})
        anyio.run(_private_ids, session)
        yield McpDoor(server, "/mcp", ids), session


async def _probe_all(door: McpDoor, tools: set[str], probes: dict[str, McpProbe]) -> dict[str, str]:
    """Each of ``tools`` knocked on by its probe, with a client per token; what failed. The
    server must offer ``full`` the very tools the build registers."""
    failures = {}
    async with AsyncExitStack() as stack:
        for token in NAMES:
            client = door.server.client(door.path, token)
            door.clients[token] = await stack.enter_async_context(client)
        offered = {t.name for t in (await door.clients[FULL].list_tools()).tools}
        if offered != tools:
            failures["tools/list"] = f"{door.path} offers {sorted(offered)}, not {sorted(tools)}"
        for name in sorted(tools & probes.keys()):
            try:
                await probes[name](door)
            except AssertionError as exc:
                failures[name] = str(exc)
    door.clients.clear()
    return failures


def test_every_mcp_tool_has_a_probe(mcp_tools: dict[str, set[str]]) -> None:
    """Each tool every build registers has a probe, and each probe a tool: a tool added
    without one fails here, by name."""
    problems = [
        f"tool {name} of the {build} build has no probe: add one that shows it refuses a "
        "token without rights"
        for build, names in mcp_tools.items()
        for name in sorted(names - BUILD_PROBES[build].keys())
    ]
    probed = DATA_TOOL_PROBES.keys() - mcp_tools["local"] - mcp_tools["shared"]
    probed |= CONTROL_TOOL_PROBES.keys() - mcp_tools["control"]
    problems += [f"probe {name} matches no tool of any build" for name in sorted(probed)]
    assert not problems, "\n".join(problems)


def test_every_local_mcp_tool_refuses_a_token_without_rights(
    mcp_tools: dict[str, set[str]], mcp_local: McpDoor
) -> None:
    """Local mode over HTTP: ``kbonly`` asking each tool for ``private`` is a tool error
    naming the refusal, with nothing of it; ``reader`` may not ingest; nothing changes."""
    failures = anyio.run(_probe_all, mcp_local, mcp_tools["local"], DATA_TOOL_PROBES)
    assert not failures, "\n\n".join(f"{name}: {why}" for name, why in failures.items())


def test_every_shared_mcp_tool_refuses_a_token_without_rights(
    mcp_tools: dict[str, set[str]], mcp_shared: tuple[McpDoor, McpDoor]
) -> None:
    """Shared mode: a session's data tools as in local mode; the control tools, which
    concern whole sessions (``private`` in them), refuse ``reader`` and ``kbonly``."""
    control, session = mcp_shared
    failures = anyio.run(_probe_all, session, mcp_tools["shared"], DATA_TOOL_PROBES)
    failures |= {
        f"control {name}": why
        for name, why in anyio.run(
            _probe_all, control, mcp_tools["control"], CONTROL_TOOL_PROBES
        ).items()
    }
    assert not failures, "\n\n".join(f"{name}: {why}" for name, why in failures.items())


def test_mcp_health_and_metrics_tell_nothing_of_private(
    mcp_local: McpDoor, mcp_shared: tuple[McpDoor, McpDoor]
) -> None:
    """The MCP servers' own routes besides the tools (/health, /metrics) tell ``kbonly``
    nothing of ``private``."""
    failures = {}
    for door in (mcp_local, mcp_shared[0]):
        for path in ("/health", "/metrics"):
            response = door.server.get(path, KB_ONLY)
            where = f"{door.server.url}{path}"
            if response.status_code != 200:
                failures[where] = f"{response.status_code}: {response.text[:300]}"
            elif SECRET in response.text or PRIVATE_NAME.search(response.text):
                failures[where] = f"names 'private': {around(response.text, 'private')}"
    assert not failures, "\n".join(f"{where}: {why}" for where, why in failures.items())


# -- besides the tools: resources, prompts and instructions --------------------------------


async def _private_uri(door: McpDoor) -> str:
    """The URI of a private document, as ``full`` lists it."""
    async with door.server.client(door.path, FULL) as client:
        listed = (await client.list_resources()).resources
    found = [str(r.uri) for r in listed if SECRET in r.name]
    assert found, [r.name for r in listed]
    return found[0]


async def _resource_leaks(door: McpDoor) -> dict[str, str]:
    """What ``kbonly`` learns of ``private`` from the instructions, the resource list and
    templates, the prompts, and reading a private document's URI (whole, or a chunk)."""
    uri = await _private_uri(door)
    seen: dict[str, str] = {}
    async with door.server.client(door.path, KB_ONLY) as client:
        seen["instructions"] = client.instructions or ""
        # Without the SDK's envelope: its cache_scope is "private" (to this caller).
        listed = (await client.list_resources()).resources
        seen["resources/list"] = json.dumps([r.model_dump(mode="json") for r in listed])
        templates = (await client.list_resource_templates()).resource_templates
        seen["resources/templates/list"] = json.dumps([t.model_dump() for t in templates])
        prompts = (await client.list_prompts()).prompts
        seen["prompts/list"] = json.dumps([p.model_dump() for p in prompts])
        for asked in (uri, f"{uri}/chunks/0"):
            try:
                read = await client.read_resource(asked)
                seen[f"read {asked}"] = f"NOT REFUSED {read.contents}"
            except MCPError as exc:
                seen[f"read {asked}"] = str(exc)
        failures = await _kb_readable(client, [str(r.uri) for r in listed])
    failures |= {
        where: f"{around(text, SECRET)} {around(text, 'private')}"
        for where, text in seen.items()
        if SECRET in text or PRIVATE_NAME.search(text) or text.startswith("NOT REFUSED")
    }
    if "- kb: " not in seen["instructions"]:
        failures["instructions"] = f"kb is not described: {seen['instructions'][:300]}"
    return failures


async def _kb_readable(client: Client, uris: list[str]) -> dict[str, str]:
    """``kbonly`` lists ``kb``'s documents, and reads them."""
    if not uris or not all(uri.startswith("knowhub://kb/") for uri in uris):
        return {"resources/list": f"not kb's documents alone: {uris}"}
    contents = (await client.read_resource(uris[0])).contents
    text = getattr(contents[0], "text", "") if contents else ""
    return {} if "Backups" in text else {f"read {uris[0]}": f"not kb's note: {contents}"}


def test_mcp_resources_and_instructions_tell_nothing_of_private(
    mcp_local: McpDoor, mcp_shared: tuple[McpDoor, McpDoor]
) -> None:
    """A token limited to ``kb`` lists only ``kb``'s documents as resources, cannot read a
    private one (the error names nothing of it), and its instructions describe ``kb``
    alone; in local mode and in a shared session."""
    failures = {}
    for door in (mcp_local, mcp_shared[1]):
        for where, why in anyio.run(_resource_leaks, door).items():
            failures[f"{door.path} {where}"] = why
    assert not failures, "\n".join(f"{where}: {why}" for where, why in failures.items())
