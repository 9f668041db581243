"""Every MCP tool group through the SDK's in-memory client, no transport in between.

The servers are the ones ``serve mcp`` builds (``build_local``, ``build_shared``: real
store, real tools); stdio and HTTP run the same tools in test_mcp_stdio.py,
test_mcp_http.py and test_mcp_shared.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from mcp import Client

from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import ServeOptions, build_local, build_shared
from tests.helpers import fast_settings, write
from tests.mcp_helpers import CONTROL_TOOLS, DATA_TOOLS, text_of

pytestmark = pytest.mark.anyio

ZEBRA = "# Zebras\n\nThe zebra migrates across the savanna in search of grass.\n"
LION = "# Lions\n\nThe lion rests in the shade through the heat of the day.\n"


@asynccontextmanager
async def local(
    tmp_path: Path, read_only: bool = False, **overrides: object
) -> AsyncIterator[Client]:
    """A client of local mode over ``tmp_path/docs``, once its first sync has ended."""
    docs = tmp_path / "docs"
    write(docs / "zebra.md", ZEBRA)
    write(docs / "extra" / "lion.md", LION)
    settings = fast_settings(tmp_path / "data", **{"server.search_docs_tool": True, **overrides})
    options = ServeOptions(docs=docs, read_only=read_only)
    server, service = build_local(settings, options, Metrics())
    try:
        service.start()
        assert await anyio.to_thread.run_sync(service.ready.wait, 60)
        async with Client(server) as client:
            yield client
    finally:
        service.close()


@asynccontextmanager
async def control(tmp_path: Path, read_only: bool = False) -> AsyncIterator[Client]:
    """A client of shared mode's control server over the folders under ``tmp_path/root``."""
    root = tmp_path / "root"
    write(root / "animals" / "zebra.md", ZEBRA)
    settings = fast_settings(tmp_path / "data")
    options = ServeOptions(transport="http", mode="shared", path_root=root, read_only=read_only)
    _, server, registry = build_shared(settings, options, Metrics())
    try:
        async with Client(server) as client:
            yield client
    finally:
        registry.close()


async def ok(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], str]:
    """Call ``tool``; it must succeed. → its structured content and its text."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text_of(result)}"
    assert result.structured_content is not None
    return result.structured_content, text_of(result)


async def fails(client: Client, tool: str, **arguments: Any) -> str:
    """Call ``tool``; it must be a tool error (not a protocol failure). → its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have failed: {text_of(result)}"
    return text_of(result)


async def names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


async def test_the_search_tools_answer_cited_passages(tmp_path: Path) -> None:
    async with local(tmp_path) as client:
        found, text = await ok(client, "query_knowledge_hub", query="zebra savanna", top_k=1)
        assert found["indexing"] is None
        [hit] = found["hits"]
        assert (hit["n"], hit["source"], hit["collection"]) == (1, "zebra.md", "default")
        assert text.startswith("1 results for 'zebra savanna' in 'default':\n\n**[1]** zebra.md")
        same, _ = await ok(client, "search_docs", query="zebra savanna", limit=1)
        assert [h["chunk_id"] for h in same["hits"]] == [hit["chunk_id"]]


async def test_a_search_of_a_collection_that_does_not_exist_is_a_tool_error(
    tmp_path: Path,
) -> None:
    async with local(tmp_path) as client:
        message = await fails(client, "query_knowledge_hub", query="zebra", collection="nope")
        assert "'nope'" in message
        invalid = await fails(client, "query_knowledge_hub", query="", top_k=99)
        assert "2 invalid arguments: query: String should have at least 1 character" in invalid
        assert "errors.pydantic.dev" not in invalid


async def test_the_document_tools_describe_collections_documents_and_passages(
    tmp_path: Path,
) -> None:
    async with local(tmp_path) as client:
        listed, text = await ok(client, "list_collections")
        [default] = listed["collections"]
        assert (default["name"], default["documents"], default["lexical_index"]) == (
            "default",
            2,
            True,
        )
        assert text.startswith("- **default**: 2 documents")
        found, _ = await ok(client, "query_knowledge_hub", query="zebra savanna", top_k=1)
        hit = found["hits"][0]
        summary, _ = await ok(client, "get_document_summary", source_hash=hit["source_hash"][:8])
        assert (summary["source"], summary["status"]) == ("zebra.md", "indexed")
        assert summary["source_hash"] == hit["source_hash"]
        passage, text = await ok(client, "get_content", chunk_id=hit["chunk_id"])
        assert "The zebra migrates across the savanna" in passage["text"]
        assert text.startswith("zebra.md, Zebras, lines ")


async def test_an_unknown_chunk_id_is_a_tool_error_naming_the_fix(tmp_path: Path) -> None:
    async with local(tmp_path) as client:
        message = await fails(client, "get_content", chunk_id="nope")
        assert "no chunk with id 'nope': copy a" in message and "from a search result" in message


async def test_the_ingest_tool_indexes_a_file_into_a_collection_with_its_tags(
    tmp_path: Path,
) -> None:
    async with local(tmp_path) as client:
        report, text = await ok(
            client, "ingest", path="extra/lion.md", collection="cats", tags={"kind": "big"}
        )
        assert (report["collection"], report["added"], report["failed"]) == (
            "cats",
            ["lion.md"],
            [],
        )
        assert text.startswith("1 added, 0 updated, 0 unchanged, 0 failed, 0 skipped (")
        found, _ = await ok(
            client, "query_knowledge_hub", query="lion", collection="cats", filters={"kind": "big"}
        )
        assert [h["source"] for h in found["hits"]] == ["lion.md"]


async def test_an_ingest_outside_the_document_root_is_a_tool_error(tmp_path: Path) -> None:
    async with local(tmp_path) as client:
        message = await fails(client, "ingest", path="../outside")
        assert "path '../outside' contains '..': give a path inside the document root" in message


async def test_a_read_only_server_lists_no_ingest_tool(tmp_path: Path) -> None:
    # The pin of the tools an agent is offered (the other tests compare with the server's).
    async with local(tmp_path) as client:
        assert await names(client) == list(DATA_TOOLS)
    async with local(tmp_path / "read-only", read_only=True) as client:
        assert await names(client) == [name for name in DATA_TOOLS if name != "ingest"]


async def test_the_control_tools_register_list_and_unregister_a_folder(tmp_path: Path) -> None:
    async with control(tmp_path) as client:
        assert await names(client) == list(CONTROL_TOOLS)  # the pin of the control tools
        registered, text = await ok(client, "register", path="animals", description="zoo")
        session = registered["session_id"]
        assert registered["chunks_count"] >= 1 and registered["endpoint"] == f"/mcp/{session}"
        assert text.startswith(f"session {session} serves ")
        listed, _ = await ok(client, "list")
        [row] = listed["sessions"]
        assert (row["session_id"], row["state"], row["description"]) == (session, "Loaded", "zoo")
        gone, _ = await ok(client, "unregister", session_id=session)
        assert gone["session_id"] == session
        listed, text = await ok(client, "list")
        assert listed["sessions"] == [] and text == "No sessions registered."
    async with control(tmp_path / "read-only", read_only=True) as client:
        assert await names(client) == ["list"]


async def test_registering_a_folder_that_does_not_exist_is_a_tool_error(tmp_path: Path) -> None:
    async with control(tmp_path) as client:
        message = await fails(client, "register", path="animal")
        assert "path 'animal' does not exist under --path-root" in message
        assert "did you mean 'animals'?" in message


async def test_ask_answers_with_citations_hit_type_and_confidence(tmp_path: Path) -> None:
    async with local(tmp_path) as client:
        answered, text = await ok(client, "ask", question="Where does the zebra migrate?")
        assert answered["hit_type"] == "rag" and answered["model"] == "extractive"
        assert "savanna" in answered["answer"] and 0 < answered["confidence"] <= 1
        [first, *_] = answered["sources"]
        assert (first["n"], first["source"]) == (1, "zebra.md") and first["chunk_id"]
        assert "\nSources:\n[1] zebra.md" in text and "(rag, confidence" in text
        assert not answered["truncated"] and answered["indexing"] is None


async def test_ask_says_when_the_documents_do_not_cover_the_question(tmp_path: Path) -> None:
    async with local(tmp_path) as client:
        answered, text = await ok(client, "ask", question="What is the GDP of Portugal in 2020?")
        assert answered["hit_type"] == "insufficient_context"
        assert "do not cover" in answered["answer"] and "Closest sources" in text
        message = await fails(client, "ask", question="zebra", collection="nope")
        assert "'nope'" in message


async def test_the_ingest_tool_reports_a_file_that_failed_before_with_its_reason(
    tmp_path: Path,
) -> None:
    async with local(tmp_path) as client:
        deep = write(tmp_path / "docs" / "deep.json", "[" * 5000 + "]" * 5000)
        first, _ = await ok(client, "ingest", path="deep.json", collection="pages")
        [failed] = first["failed"]
        assert failed["reason"].startswith(f"{deep}: nests arrays and objects deeper than")
        again, text = await ok(client, "ingest", path="deep.json", collection="pages")
        assert again["failed"] == [{"source": "deep.json", "reason": again["failed"][0]["reason"]}]
        reason = again["failed"][0]["reason"]
        assert reason.startswith("skipped as previously failed (")
        assert reason.endswith(failed["reason"]) and failed["reason"] in text
