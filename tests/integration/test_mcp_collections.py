"""Which collection ``serve mcp`` serves, and which its tools use when a call names none.

One rule (``knowhub.default_collection``) for every interface: a configured ``collection``
(config file, ``KNOWHUB_COLLECTION``) is the one the served folder goes into and the one
every tool uses by default; with none configured, a folder another collection already
indexes is served from that collection (nothing built twice). A real ``serve mcp`` over
stdio, the official SDK client.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import knowhub, write
from tests.mcp_helpers import eventually, text_of
from tests.mcp_stdio_helpers import CORPUS, async_true, call, make_corpus, serve

pytestmark = pytest.mark.anyio

FILES = {name: CORPUS[name] for name in ("backups.md", "deploy.txt")}
HANDBOOK = {"KNOWHUB_COLLECTION": "handbook"}


async def _names(client: object) -> list[str]:
    out = await call(client, "list_collections")  # type: ignore[arg-type]
    return [c["name"] for c in out["collections"]]


async def test_tools_naming_no_collection_use_the_configured_one(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, FILES)
    async with serve(root, env=HANDBOOK) as client:

        async def indexed() -> bool:
            out = await call(client, "list_collections")
            return [(c["name"], c["documents"]) for c in out["collections"]] == [("handbook", 2)]

        await eventually(indexed, timeout=120)
        found = await call(client, "query_knowledge_hub", query="nightly backup cold storage")
        assert found["collection"] == "handbook"
        assert found["hits"][0]["source"] == "backups.md"
        assert {h["collection"] for h in found["hits"]} == {"handbook"}
        docs = await call(client, "search_docs", query="canary traffic")
        assert docs["hits"][0]["source"] == "deploy.txt"
        summary = await call(
            client, "get_document_summary", source_hash=found["hits"][0]["source_hash"]
        )
        assert summary["collection"] == "handbook"
        answer = await call(client, "ask", question="How long are snapshots kept?")
        assert answer["sources"], answer
        write(root / "docs" / "restore.md", "# Restores\n\nRestores are tested monthly.\n")
        added = await call(client, "ingest", path="restore.md")
        assert added["collection"] == "handbook"
        assert await _names(client) == ["handbook"]  # no 'default' made on the way


async def test_a_folder_another_collection_indexes_is_served_from_it(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, FILES)
    made = knowhub("--data-dir", "data", "ingest", "docs", "-c", "handbook", cwd=root)
    assert made.returncode == 0, made.stderr
    log = root / "serve.log"
    async with serve(root, "--log-file", str(log)) as client:
        synced = re.compile(r"\d+ added, .* embedded")
        await eventually(
            async_true(lambda: log.exists() and synced.search(log.read_text("utf-8"))),
            timeout=120,
        )
        assert await _names(client) == ["handbook"]
        found = await call(client, "query_knowledge_hub", query="canary traffic")
        assert found["collection"] == "handbook"
        assert found["hits"][0]["source"] == "deploy.txt"
    served = log.read_text("utf-8")
    assert re.search(r"0 added, 0 updated, 0 removed, 2 unchanged, 0 failed, 0 embedded", served)


async def test_a_folder_several_collections_index_asks_which_to_serve(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, FILES)
    for name in ("handbook", "wiki"):
        made = knowhub("--data-dir", "data", "ingest", "docs", "-c", name, cwd=root)
        assert made.returncode == 0, made.stderr
    async with serve(root) as client:
        result = await client.call_tool("query_knowledge_hub", {"query": "canary"})
        assert result.is_error
        message = text_of(result)
        assert "handbook, wiki" in message and "KNOWHUB_COLLECTION=handbook" in message
        named = await call(client, "query_knowledge_hub", query="canary", collection="wiki")
        assert named["hits"][0]["source"] == "deploy.txt"  # naming one still works
        assert sorted(await _names(client)) == ["handbook", "wiki"]  # nothing built
