"""A request that names no collection goes to the configured one, on every interface — and,
for a token limited to another collection, to that one.

``knowhub.yaml`` says ``collection: handbook``; the data dir holds ``handbook`` (policy.md)
and ``notes`` (standup.md), both about the office schedule, so a search naming no collection
shows by its hits which one it read. The tokens: ``full`` (every collection) and
``notesonly`` (``notes`` alone). Without a token (the CLI, MCP over stdio) and with ``full``
the default is ``handbook``; with ``notesonly`` it is ``notes``: the HTTP API, the console's
pages, the chat's search tool (over HTTP and ``knowhub chat``), the CLI (``--as-token``), the
MCP tools over stdio and in a shared-mode session. Real processes, one of each per module.
(The rule itself: ``knowhub.default_collection``; a data dir without a configured
collection: test_default_collection_surfaces.py.)
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from knowhub.testing.llm_server import LlmServer, Reply, ToolReply, serve
from tests.helpers import knowhub, write
from tests.http_helpers import ApiServer, api_server, llm_env
from tests.mcp_helpers import HttpServer, http_server, stdio_params, text_of
from tests.upload_helpers import FROM_PAGE

HANDBOOK_TEXT = (
    "# Office handbook\n\nThe office schedule: everyone takes 25 days of leave a year.\n"
)
NOTES_TEXT = "# Standup notes\n\nThe office schedule: the standup moved to 9:30 on Mondays.\n"
QUERY = "office schedule"
QUESTION = "What is the office schedule?"

FULL = "full-Wc5Ld8Ty1Qk3Zm7s"
NOTES_ONLY = "notesonly-Bv9Hx2Ro6Jn4Pe0a"
TOKENS = [
    {"name": "full", "token_env": "KH_CFG_FULL"},
    {"name": "notesonly", "token_env": "KH_CFG_NOTES", "collections": ["notes"]},
]
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps(TOKENS),
    "KH_CFG_FULL": FULL,
    "KH_CFG_NOTES": NOTES_ONLY,
}
# Who asks, and the collection and document a request of theirs naming none must reach.
CALLERS = [
    pytest.param(FULL, "handbook", "policy.md", id="full-gets-the-configured-one"),
    pytest.param(NOTES_ONLY, "notes", "standup.md", id="notesonly-gets-its-own"),
]
NAMES = {FULL: "full", NOTES_ONLY: "notesonly"}
OTHER = {"policy.md": "standup.md", "standup.md": "policy.md"}


def _cli(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = knowhub("--data-dir", "data", *args, cwd=root, env=env)
    assert done.returncode == 0, f"knowhub {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``knowhub.yaml`` (``collection: handbook``) and ``data`` holding
    ``handbook`` and ``notes``; ``stdio-data`` is a copy, for the stdio MCP server."""
    folder = tmp_path_factory.mktemp("configured")
    write(folder / "knowhub.yaml", "collection: handbook\n")
    write(folder / "handbook-docs" / "policy.md", HANDBOOK_TEXT)
    write(folder / "notes-docs" / "standup.md", NOTES_TEXT)
    _cli(folder, "ingest", "handbook-docs", "-c", "handbook")
    _cli(folder, "ingest", "notes-docs", "-c", "notes")
    shutil.copytree(folder / "data", folder / "stdio-data")
    return folder


def _model(body: dict[str, Any]) -> Reply:
    """The scripted model: an answer's model answers; a chat's searches naming no
    collection, then answers with what the search said (each passage names its collection)."""
    if not body.get("tools"):
        return "The office schedule is in the documents [1]."
    said = [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    return "\n".join(said) if said else [ToolReply("knowhub__search", {"query": QUERY})]


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    with serve(script=_model) as running:
        yield running


@pytest.fixture(scope="module")
def server(root: Path, llm: LlmServer) -> Iterator[ApiServer]:
    """``serve http`` on the data dir (its config file in its folder), the two tokens."""
    env = {**TOKEN_ENV, **llm_env(llm)}
    with api_server(cwd=root, data_dir=root / "data", env=env) as running:
        yield running


# -- the HTTP API, the console, the chat over HTTP ---------------------------------------


@pytest.mark.parametrize(("token", "collection", "source"), CALLERS)
def test_the_http_api_defaults_to_the_callers_collection(
    server: ApiServer, token: str, collection: str, source: str
) -> None:
    """``/api/search``, ``/api/ask`` and ``/api/documents`` naming no collection read
    ``handbook`` for ``full`` and ``notes`` for ``notesonly``."""
    found = server.post("/api/search", token, json={"query": QUERY})
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["collection"] == collection
    assert {(h["collection"], h["source"]) for h in body["hits"]} == {(collection, source)}
    asked = server.post("/api/ask", token, json={"question": QUESTION})
    assert asked.status_code == 200, asked.text
    sources = {(s["collection"], s["source"]) for s in asked.json()["sources"]}
    assert sources == {(collection, source)}, asked.json()
    listed = server.get("/api/documents", token).json()
    assert listed["collection"] == collection
    assert [d["source"] for d in listed["documents"]] == [source]


@pytest.mark.parametrize(("token", "collection", "source"), CALLERS)
def test_the_console_pages_default_to_the_callers_collection(
    server: ApiServer, token: str, collection: str, source: str
) -> None:
    """The search page, the documents page, the Ask page's preselected collection and its
    answer (the form without script) naming none use the caller's collection."""
    searched = server.get("/ui/search", token, params={"q": QUERY})
    assert searched.status_code == 200, searched.text
    assert source in searched.text and OTHER[source] not in searched.text
    assert f"hits in {collection}" in " ".join(re.sub(r"<[^>]+>", " ", searched.text).split())
    documents = server.get("/ui/documents", token)
    assert documents.status_code == 200, documents.text
    assert source in documents.text and OTHER[source] not in documents.text
    page = server.get("/ui/ask", token)
    assert re.findall(r'<option value="([^"]*)" selected>', page.text) == [collection]
    answered = server.post("/ui/ask", token, data={"question": QUESTION}, headers=FROM_PAGE)
    assert answered.status_code == 200, answered.text
    assert source in answered.text and OTHER[source] not in answered.text


@pytest.mark.parametrize(("token", "collection", "source"), CALLERS)
def test_the_chats_search_tool_defaults_to_the_callers_collection(
    server: ApiServer, token: str, collection: str, source: str
) -> None:
    """``/api/chat`` naming no collection, its model searching without naming one: the
    passages come from the caller's collection (each says ``collection NAME``)."""
    chat = server.post("/api/chat", token, json={"question": QUESTION})
    assert chat.status_code == 200, chat.text
    answer = chat.json()["answer"]
    assert f"collection {collection}," in answer and source in answer, answer
    assert OTHER[source] not in answer, answer


# -- the CLI -----------------------------------------------------------------------------


@pytest.mark.parametrize(("token", "collection", "source"), CALLERS)
def test_the_cli_search_defaults_to_the_callers_collection(
    root: Path, token: str, collection: str, source: str
) -> None:
    """``knowhub search`` without ``-c`` reads ``handbook`` (as its owner, or ``--as-token
    full``); ``--as-token notesonly`` reads ``notes``."""
    as_token = ["--as-token", NAMES[token]]
    runs = [as_token] if token == NOTES_ONLY else [[], as_token]
    for extra in runs:
        hits = json.loads(_cli(root, *extra, "search", QUERY, "--json", env=TOKEN_ENV))
        assert {(h["collection"], h["source"]) for h in hits} == {(collection, source)}, extra


@pytest.mark.parametrize(("token", "collection", "source"), CALLERS)
def test_knowhub_chat_searches_the_callers_collection(
    root: Path, llm: LlmServer, token: str, collection: str, source: str
) -> None:
    """``knowhub chat`` (``--as-token``), its model's search naming no collection."""
    as_token = ["--as-token", NAMES[token]] if token == NOTES_ONLY else []
    env = {**TOKEN_ENV, **llm_env(llm)}
    out = json.loads(_cli(root, *as_token, "chat", QUESTION, "--json", env=env))
    assert f"collection {collection}," in out["answer"], out
    assert [c["source"] for c in out["citations"]] == [source], out


# -- MCP: over stdio, and in a shared-mode session ---------------------------------------


async def _structured(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}): {text_of(result)}"
    structured: dict[str, Any] = result.structured_content or {}
    return structured


async def _tools_default(client: Client, collection: str, source: str) -> None:
    """Each data tool that takes a collection, called naming none, reads ``collection``
    (``get_document_summary`` by the hash of ``source``, found there)."""
    found = await _structured(client, "query_knowledge_hub", query=QUERY)
    assert found["collection"] == collection, found
    assert {h["collection"] for h in found["hits"]} == {collection}, found
    (hit,) = [h for h in found["hits"] if h["source"].endswith(source)]
    docs = await _structured(client, "search_docs", query=QUERY)
    assert {h["collection"] for h in docs["hits"]} == {collection}, docs
    answer = await _structured(client, "ask", question=QUESTION)
    assert answer["sources"] and {s["collection"] for s in answer["sources"]} == {collection}
    summary = await _structured(client, "get_document_summary", source_hash=hit["source_hash"])
    assert summary["collection"] == collection and summary["source"].endswith(source)


async def _over_stdio(root: Path) -> None:
    params = stdio_params(
        "--data-dir",
        str(root / "stdio-data"),
        "serve",
        "mcp",
        "--docs",
        str(root / "handbook-docs"),
        cwd=root,
    )
    with (root / "stdio.log").open("a", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await _tools_default(client, "handbook", "policy.md")


def test_mcp_tools_over_stdio_default_to_the_configured_collection(root: Path) -> None:
    """``serve mcp`` on stdio (the owner, no token) serves ``handbook-docs`` as the configured
    ``handbook``, and every tool naming no collection reads it, ``notes`` there beside it."""
    anyio.run(_over_stdio, root)


async def _register(server: HttpServer) -> str:
    """``full`` registers ``team`` (indexed into the configured ``handbook``) and ingests its
    standup.md into ``notes`` too; the session's id."""
    async with server.client("/mcp", FULL) as control:
        made = await _structured(control, "register", path="team")
    session = str(made["session_id"])
    async with server.client(f"/mcp/{session}", FULL) as data:
        added = await _structured(data, "ingest", path="standup.md", collection="notes")
        assert added["collection"] == "notes" and added["added"], added
    return session


@pytest.fixture(scope="module")
def shared(root: Path) -> Iterator[tuple[HttpServer, str]]:
    """``serve mcp --mode shared`` with the config file and the two tokens, and the id of
    the session serving ``team`` (policy.md and standup.md)."""
    write(root / "shared" / "team" / "policy.md", HANDBOOK_TEXT)
    write(root / "shared" / "team" / "standup.md", NOTES_TEXT)
    args = ("--mode", "shared", "--path-root", str(root / "shared"))
    with http_server(*args, cwd=root, data_dir=root / "shared-data", env=TOKEN_ENV) as running:
        yield running, anyio.run(_register, running)


@pytest.mark.parametrize(("token", "collection", "source"), CALLERS)
def test_mcp_tools_in_a_shared_session_default_to_the_callers_collection(
    shared: tuple[HttpServer, str], token: str, collection: str, source: str
) -> None:
    """In a session (its folder in ``handbook``, standup.md in ``notes`` too), each tool
    naming no collection reads ``handbook`` for ``full`` and ``notes`` for ``notesonly``."""
    server, session = shared

    async def probe() -> None:
        async with server.client(f"/mcp/{session}", token) as client:
            await _tools_default(client, collection, source)

    anyio.run(probe)


def test_a_server_without_the_config_file_has_no_default_to_give(root: Path) -> None:
    """The control: the same data dir, its config file out of the way (``--config`` naming
    an empty one), leaves a request naming no collection nothing to go by — so the tests
    above pass because of ``collection: handbook``, not by chance."""
    write(root / "empty.yaml", "{}\n")
    done = knowhub("--config", "empty.yaml", "--data-dir", "data", "search", QUERY, cwd=root)
    assert done.returncode != 0, done.stdout
    assert "handbook" in done.stderr and "notes" in done.stderr, done.stderr
