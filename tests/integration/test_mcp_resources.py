"""Documents as MCP resources, ``read_document``, the generated instructions and the prompt,
over stdio: a real ``knowhub serve mcp`` (local mode) and the official SDK client.

The served folder holds a long handbook (small chunks, so it has many) and two notes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client, MCPError
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourcesListChanged
from mcp_types import BlobResourceContents, ResourceListChangedNotification, TextResourceContents

from tests.helpers import ROOT, WAIT_S, fast_settings, write
from tests.mcp_helpers import eventually, http_server, stdio_params, text_of
from tests.mcp_stdio_helpers import call, fails, serve

pytestmark = pytest.mark.anyio

# Twelve numbered paragraphs: with 200-char chunks, a dozen chunks or so.
HANDBOOK = "# Handbook\n\n" + "\n\n".join(
    f"Paragraph {n}: the {word} rule says that every engineer files a {word} report "
    f"before the {n}th review, and keeps a copy for a year."
    for n, word in enumerate(
        [
            "amber",
            "basil",
            "cedar",
            "dahlia",
            "elder",
            "fennel",
            "ginger",
            "hazel",
            "iris",
            "juniper",
            "kelp",
            "lotus",
        ],
        start=1,
    )
)
NOTES = {
    "backups.md": "# Backups\n\nDatabase backups run every six hours and are kept 35 days.\n",
    "deploy.md": "# Deploys\n\nA canary takes five percent of the traffic for thirty minutes.\n",
}
SMALL_CHUNKS = {"KNOWHUB_CHUNKING__SIZE": "200", "KNOWHUB_CHUNKING__OVERLAP": "40"}


def _corpus(root: Path) -> Path:
    write(root / "docs" / "handbook.md", HANDBOOK)
    for name, text in NOTES.items():
        write(root / "docs" / name, text)
    return root


@asynccontextmanager
async def _served(
    root: Path,
    messages: list[IncomingMessage] | None = None,
    mode: str = "auto",
    count: int = 1 + len(NOTES),
) -> AsyncIterator[Client]:
    """A stdio client of ``serve mcp --docs ROOT/docs``, the folder indexed; the
    server's notifications go to ``messages``."""

    async def keep(message: IncomingMessage) -> None:
        if messages is not None:
            messages.append(message)

    async with serve(root, env=SMALL_CHUNKS, message_handler=keep, mode=mode) as client:
        await _indexed(client, count)
        yield client


async def _indexed(client: Client, count: int) -> None:
    async def ready() -> bool:
        out = await call(client, "list_collections")
        return sum(c["documents"] for c in out["collections"]) == count

    await eventually(ready)


def _uri(resources: list[Any], name: str) -> str:
    (found,) = [str(r.uri) for r in resources if r.name.endswith(name)]
    return found


async def test_documents_are_resources_read_whole_or_by_chunk(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        listed = await client.list_resources()
        names = sorted(Path(r.name).name for r in listed.resources)
        assert names == ["backups.md", "deploy.md", "handbook.md"]
        assert listed.next_cursor is None
        uri = _uri(listed.resources, "handbook.md")
        assert uri.startswith("knowhub://default/")
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        assert templates == {
            "knowhub://{collection}/{doc_id}",
            "knowhub://{collection}/{doc_id}/chunks/{n}",
        }

        (whole,) = (await client.read_resource(uri)).contents
        assert isinstance(whole, TextResourceContents)
        assert " ".join(whole.text.split()) == " ".join(HANDBOOK.split())

        first = (await client.read_resource(f"{uri}/chunks/0")).contents[0]
        assert isinstance(first, TextResourceContents)
        assert first.text.startswith("# Handbook") and len(first.text) < len(whole.text)
        assert first.meta is not None and first.meta["chunk_id"].startswith(uri.rsplit("/")[-1])


async def test_unknown_resources_are_errors_that_say_what_to_do(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        uri = _uri((await client.list_resources()).resources, "backups.md")
        cases = {
            "https://example.com/x": "not a knowhub URI",
            "knowhub://default/0123456789abcdef": "no document with id",
            "knowhub://nosuch/0123456789abcdef": "resources/list",
            f"{uri}/chunks/99": "it has 1 chunks",
        }
        for bad, expected in cases.items():
            with pytest.raises(MCPError) as caught:
                await client.read_resource(bad)
            assert expected in str(caught.value), (bad, str(caught.value))
        with pytest.raises(MCPError, match="nextCursor"):
            await client.list_resources(cursor="garbage")
        # The server goes on answering.
        assert (await client.read_resource(uri)).contents


async def test_resources_are_paginated_with_the_protocols_cursor(tmp_path: Path) -> None:
    for n in range(105):
        write(tmp_path / "docs" / f"note-{n:03d}.md", f"# Note {n}\n\nNote number {n}.\n")
    params = stdio_params(
        "--data-dir", str(tmp_path / "data"), "serve", "mcp", "--docs", str(tmp_path / "docs"),
        cwd=tmp_path,
    )  # fmt: skip
    async with Client(stdio_client(params)) as client:
        await _indexed(client, 105)
        pages, cursor, seen = 0, None, []
        while True:
            listed = await client.list_resources(cursor=cursor)
            pages += 1
            seen += [Path(r.name).name for r in listed.resources]
            cursor = listed.next_cursor
            if cursor is None:
                break
        assert pages == 2
        assert seen == [f"note-{n:03d}.md" for n in range(105)]


async def test_a_new_document_is_announced_to_a_handshake_era_client(tmp_path: Path) -> None:
    """Protocol 2025-11-25: ``notifications/resources/list_changed`` on the connection."""
    messages: list[IncomingMessage] = []
    async with _served(_corpus(tmp_path), messages, mode="legacy") as client:
        capabilities = client.server_capabilities.resources
        assert capabilities is not None and capabilities.list_changed
        messages.clear()
        write(tmp_path / "docs" / "oncall.md", "# On-call\n\nThe rota changes every Monday.\n")

        async def told() -> bool:
            return any(isinstance(m, ResourceListChangedNotification) for m in messages)

        await eventually(told)
        names = [Path(r.name).name for r in (await client.list_resources()).resources]
        assert "oncall.md" in names


async def test_a_removed_document_is_announced_to_a_listening_client(tmp_path: Path) -> None:
    """Protocol 2026-07-28: a ``ResourcesListChanged`` event on ``subscriptions/listen``."""
    async with _served(_corpus(tmp_path)) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resources_list_changed=True) as events:
            (tmp_path / "docs" / "deploy.md").unlink()
            with anyio.fail_after(WAIT_S):
                event = await events.__anext__()
        assert isinstance(event, ResourcesListChanged)
        names = [Path(r.name).name for r in (await client.list_resources()).resources]
        assert names == ["backups.md", "handbook.md"]


async def test_read_document_brings_a_hits_neighbours(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        hits = (await call(client, "query_knowledge_hub", query="juniper report", top_k=1))["hits"]
        assert "juniper" in hits[0]["text"]
        out = await call(client, "read_document", chunk_id=hits[0]["chunk_id"], before=1, after=1)
        passages = out["passages"]
        assert len(passages) == 3 and [p["n"] for p in passages] == [1, 2, 3]
        assert [p["hit"] for p in passages] == [False, True, False]
        assert passages[1]["chunk_id"] == hits[0]["chunk_id"]
        starts = [p["char_start"] for p in passages]
        assert starts == sorted(starts) and passages[0]["char_end"] <= passages[1]["char_start"]
        assert out["uri"].startswith("knowhub://default/") and out["source"].endswith("handbook.md")

        # At the document's start there is nothing before; at its end nothing after.
        first_chunk = await _chunk_at(client, out["uri"], 0)
        start = await call(client, "read_document", chunk_id=first_chunk, before=3, after=0)
        assert [p["hit"] for p in start["passages"]] == [True]
        last = await _last_chunk(client, out["uri"])
        end = await call(client, "read_document", chunk_id=last, before=0, after=3)
        assert [p["hit"] for p in end["passages"]] == [True]
        assert "lotus" in end["passages"][0]["text"]


async def test_read_document_keeps_to_the_size_budget(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        hit = (await call(client, "query_knowledge_hub", query="fennel report", top_k=1))["hits"][0]
        wide = {"chunk_id": hit["chunk_id"], "before": 10, "after": 10}
        whole = await client.call_tool("read_document", wide)
        assert len((whole.structured_content or {})["passages"]) > 4
        for budget in (200, 400, 700):
            result = await client.call_tool("read_document", {**wide, "max_chars": budget})
            assert not result.is_error, text_of(result)
            assert len(text_of(result)) <= budget, (budget, text_of(result))
            out = result.structured_content or {}
            assert out["truncated"] and any(p["hit"] for p in out["passages"])


async def _chunk_at(client: Client, uri: str, n: int) -> str:
    contents = (await client.read_resource(f"{uri}/chunks/{n}")).contents
    return str((contents[0].meta or {})["chunk_id"])


async def _last_chunk(client: Client, uri: str) -> str:
    n = 0
    while True:
        try:
            await client.read_resource(f"{uri}/chunks/{n + 1}")
        except MCPError:
            return await _chunk_at(client, uri, n)
        n += 1


async def test_read_document_pages_stitch_back_to_the_whole_text(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        hit = (await call(client, "query_knowledge_hub", query="amber rule", top_k=1))["hits"][0]
        pages, offset = [], 0
        while offset is not None:
            result = await client.call_tool(
                "read_document",
                {"document": hit["source_hash"], "offset": offset, "max_chars": 200},
            )
            assert not result.is_error, text_of(result)
            assert len(text_of(result)) <= 200  # the whole result fits the budget
            out = result.structured_content or {}
            pages.append(out["text"])
            assert out["offset"] == offset
            offset = out["next_offset"]
        assert len(pages) > 2
        assert " ".join("".join(pages).split()) == " ".join(HANDBOOK.split())
        # An offset is a hit's char_start: reading there starts with the hit's text.
        there = await call(
            client, "read_document", document=hit["source"], offset=hit["char_start"]
        )
        assert there["text"].startswith(hit["text"][:40])


async def test_read_document_arguments_are_checked(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        await fails(client, "read_document", {}, "give chunk_id", "or document")
        both = {"chunk_id": "x", "document": "backups.md"}
        await fails(client, "read_document", both, "not both")
        await fails(client, "read_document", {"chunk_id": "nope"}, "no chunk with id")
        await fails(client, "read_document", {"document": "nope.md"}, "document 'nope.md'")
        far = {"document": "backups.md", "offset": 10**6}
        await fails(client, "read_document", far, "offset 1000000", "past the end")
        await fails(
            client, "read_document", {"document": "backups.md", "max_chars": 5}, "max_chars"
        )
        await fails(client, "read_document", {"chunk_id": "x", "before": 99}, "before")


async def test_read_document_tells_copies_of_one_file_apart(tmp_path: Path) -> None:
    """Copies share a source hash, not an id: a chunk reads around in its own copy, and a
    hash naming both asks for the path."""
    _corpus(tmp_path)
    write(tmp_path / "docs" / "copy.md", NOTES["backups.md"])
    async with _served(tmp_path, count=2 + len(NOTES)) as client:
        hits = (await call(client, "query_knowledge_hub", query="backups six hours"))["hits"]
        copies = {h["source"]: h for h in hits if h["source"] in ("backups.md", "copy.md")}
        assert len(copies) == 2 and len({h["source_hash"] for h in copies.values()}) == 1
        for source, hit in copies.items():
            out = await call(client, "read_document", chunk_id=hit["chunk_id"])
            assert out["source"] == source
        shared = copies["copy.md"]["source_hash"]
        await fails(client, "read_document", {"document": shared}, "2 documents", "give the path")
        out = await call(client, "read_document", document="copy.md")
        assert out["source"] == "copy.md" and "six hours" in out["text"]


async def test_instructions_say_what_the_server_holds_and_when_to_search(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        pass
    # Written at the handshake: a second client finds the folder indexed.
    async with _served(tmp_path) as client:
        text = client.instructions or ""
    assert "default: 3 documents" in text
    assert "'Handbook'" in text and "languages: en" in text
    assert "query_knowledge_hub" in text and "read_document" in text
    assert len(text) <= 1500


async def test_the_citation_prompt_names_the_tools_and_the_question(tmp_path: Path) -> None:
    async with _served(_corpus(tmp_path)) as client:
        (listed,) = (await client.list_prompts()).prompts
        assert listed.name == "answer_with_citations"
        got = await client.get_prompt(
            "answer_with_citations", {"question": "How long are backups kept?"}
        )
        text = got.messages[0].content.text  # type: ignore[union-attr]
        assert "How long are backups kept?" in text
        for piece in ("query_knowledge_hub", "read_document", "[n]"):
            assert piece in text
        with pytest.raises(MCPError, match="question"):
            await client.get_prompt("answer_with_citations", {})


async def test_pictures_of_a_document_come_as_image_blobs(tmp_path: Path) -> None:
    from tests.pictures_helpers import shapes_png, word_with_figure

    _corpus(tmp_path)
    word_with_figure(tmp_path / "docs" / "chart.docx", shapes_png(1), icon=False, alt="A chart")
    params = stdio_params(
        "--data-dir", str(tmp_path / "data"), "serve", "mcp", "--docs", str(tmp_path / "docs"),
        cwd=tmp_path,
    )  # fmt: skip
    async with Client(stdio_client(params)) as client:
        await _indexed(client, 2 + len(NOTES))
        uri = _uri((await client.list_resources()).resources, "chart.docx")
        with anyio.fail_after(WAIT_S):
            contents = (await client.read_resource(uri)).contents
        blobs = [c for c in contents if isinstance(c, BlobResourceContents)]
        assert blobs and blobs[0].mime_type.startswith("image/")


def _documented(heading: str) -> str:
    """The Python example of docs/mcp.md's paragraph opening with ``heading``."""
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    after = page.split(heading, 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


async def test_the_documented_examples_run(tmp_path: Path) -> None:
    """docs/mcp.md's resource and prompt examples, as written, against the server
    ``serve mcp`` builds (the SDK's client in memory)."""
    from knowhub.interfaces.mcp.metrics import Metrics
    from knowhub.interfaces.mcp.server import ServeOptions, build_local

    _corpus(tmp_path)
    settings = fast_settings(tmp_path / "data")
    server, service = build_local(settings, ServeOptions(docs=tmp_path / "docs"), Metrics())
    service.start()
    assert service.ready.wait(WAIT_S), "the first sync did not finish"
    code = _documented("**Documents as resources.**") + _documented("**Instructions and prompts.**")
    body = "".join(f"    {line}\n" for line in code.splitlines())
    namespace: dict[str, Any] = {"Client": Client}
    exec(f"async def example(server):\n{body}    return locals()\n", namespace)
    try:
        seen = await namespace["example"](server)
    finally:
        service.close()
    assert str(seen["uri"]).startswith("knowhub://default/") and seen["text"].strip()
    assert seen["first"].meta["chunk_id"].startswith(str(seen["uri"]).rsplit("/", 1)[-1])
    assert "How long are backups kept?" in seen["prompt"].messages[0].content.text


async def test_over_http_a_listening_client_is_told_of_a_changed_folder(tmp_path: Path) -> None:
    """``serve mcp --transport http`` (stateless): a 2026-07-28 client hears of a change on
    its ``subscriptions/listen`` stream."""
    _corpus(tmp_path)
    args = ("--docs", str(tmp_path / "docs"))
    with http_server(*args, cwd=tmp_path, data_dir=tmp_path / "data", env=SMALL_CHUNKS) as srv:
        async with srv.client() as first:
            await _indexed(first, 1 + len(NOTES))
        async with (
            httpx.AsyncClient(timeout=WAIT_S) as http,
            Client(
                streamable_http_client(srv.url + "/mcp", http_client=http), mode="2026-07-28"
            ) as client,
        ):
            async with client.listen(resources_list_changed=True) as events:
                write(tmp_path / "docs" / "oncall.md", "# On-call\n\nMondays.\n")
                with anyio.fail_after(WAIT_S):
                    assert isinstance(await events.__anext__(), ResourcesListChanged)
            names = [Path(r.name).name for r in (await client.list_resources()).resources]
            assert "oncall.md" in names


async def test_over_http_an_older_client_gets_resources_and_instructions(tmp_path: Path) -> None:
    """A handshake-era client over HTTP reads the resources and gets the instructions, and
    is not promised list changes: a stateless transport has no stream to tell it on."""
    _corpus(tmp_path)
    args = ("--docs", str(tmp_path / "docs"))
    with http_server(*args, cwd=tmp_path, data_dir=tmp_path / "data", env=SMALL_CHUNKS) as srv:
        async with srv.client() as first:
            await _indexed(first, 1 + len(NOTES))
        async with _legacy(srv.url + "/mcp", []) as client:
            assert "default: 3 documents" in (client.instructions or "")
            capabilities = client.server_capabilities.resources
            assert capabilities is not None and not capabilities.list_changed
            uri = _uri((await client.list_resources()).resources, "backups.md")
            (text,) = (await client.read_resource(uri)).contents
            assert "six hours" in text.text  # type: ignore[union-attr]


async def test_shared_mode_sessions_serve_their_own_documents(tmp_path: Path) -> None:
    """``serve mcp --mode shared``: each session lists and reads its own folder's
    documents, and its instructions describe them."""
    for name in ("a", "b"):
        write(tmp_path / "root" / name / "note.md", f"# Note {name}\n\nFolder {name}.\n")
    write(tmp_path / "root" / "b" / "more.md", "# More\n\nAnother note.\n")
    args = ("--mode", "shared", "--path-root", str(tmp_path / "root"))
    with http_server(*args, cwd=tmp_path, data_dir=tmp_path / "data") as srv:
        ids = {}
        async with srv.client("/mcp") as control:
            for name in ("a", "b"):
                made = await call(control, "register", path=name)
                ids[name] = made["session_id"]
        for name, count in (("a", 1), ("b", 2)):
            async with srv.client(f"/mcp/{ids[name]}") as client:
                assert f"default: {count} document" in (client.instructions or "")
                listed = (await client.list_resources()).resources
                assert len(listed) == count
                uri = _uri(listed, "note.md")
                (text,) = (await client.read_resource(uri)).contents
                assert f"Folder {name}" in text.text  # type: ignore[union-attr]


@asynccontextmanager
async def _legacy(url: str, messages: list[IncomingMessage]) -> AsyncIterator[Client]:
    async def keep(message: IncomingMessage) -> None:
        messages.append(message)

    async with (
        httpx.AsyncClient(timeout=WAIT_S) as http,
        Client(
            streamable_http_client(url, http_client=http), message_handler=keep, mode="legacy"
        ) as client,
    ):
        yield client
