"""Local mode's server in-process, through the SDK's in-memory client: the first sync.

The same objects ``serve mcp --docs`` runs (``build_local``: real store, real tools), with
the first sync started by the test, so that a call can be made before it begins or while a
call waits for it. Over stdio the same is covered in test_mcp_stdio.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from knowhub.errors import ConfigError
from knowhub.interfaces.mcp.local import LocalService
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import ServeOptions, build_local
from tests.helpers import WAIT_S, catching, fast_settings, write
from tests.mcp_helpers import eventually

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def local(tmp_path: Path, wait_s: float) -> AsyncIterator[tuple[Client, LocalService]]:
    """A client of local mode over ``tmp_path/docs``, its first sync not started yet."""
    docs = tmp_path / "docs"
    write(docs / "zebra.md", "# Zebras\n\nThe zebra migrates across the savanna.\n")
    settings = fast_settings(tmp_path / "data", **{"server.first_sync_wait_s": wait_s})
    server, service = build_local(settings, ServeOptions(docs=docs), Metrics())
    try:
        async with Client(server) as client:
            yield client, service
    finally:
        service.close()


async def test_a_search_before_the_first_sync_made_the_collection_says_so(tmp_path: Path) -> None:
    # It answered "unknown collection 'default' (known: none yet); ingest into it first".
    async with local(tmp_path, wait_s=0) as (client, _):
        result = await client.call_tool("query_knowledge_hub", {"query": "zebra"})
        text: str = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, text
        assert text.startswith("Indexing in progress (collection 'default': files still")
        assert "No results for 'zebra'" in text
        out: dict[str, Any] | None = result.structured_content
        assert out is not None and out["hits"] == []
        assert out["indexing"] == {
            "state": "running",
            "collection": "default",
            "files_done": 0,
            "files_total": None,
            "chunks_done": 0,
            "chunks_total": 0,
            "first_sync": True,
        }


async def test_a_search_waits_for_the_first_sync_to_end(tmp_path: Path) -> None:
    said = f"query_knowledge_hub waits up to {WAIT_S:.1f} s for the first sync"
    waits = catching("knowhub.mcp", lambda record: said in record.getMessage())
    # The setting under test, generous: the search must still wait when the sync starts.
    async with local(tmp_path, wait_s=WAIT_S) as (client, service), anyio.create_task_group() as tg:
        answers: list[dict[str, Any]] = []

        async def ask() -> None:
            result = await client.call_tool("query_knowledge_hub", {"query": "zebra savanna"})
            assert not result.is_error and result.structured_content is not None
            answers.append(result.structured_content)

        with waits as caught:
            tg.start_soon(ask)
            await anyio.to_thread.run_sync(caught.first)  # the search said it waits
        assert not answers
        service.start()  # only now: the search was waiting for it

        async def answered() -> bool:
            return bool(answers)

        await eventually(answered)
    assert answers[0]["indexing"] is None
    assert [h["source"] for h in answers[0]["hits"]] == ["zebra.md"]


def test_a_docs_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data")
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match=r"--docs .*nope does not exist: give the folder"):
        LocalService(settings, missing, Metrics(), watch=False)
    assert not missing.exists()  # it was created, empty, with a warning on stderr only
    write(tmp_path / "file.md", "# Not a folder\n")
    with pytest.raises(ConfigError, match=r"file\.md is not a folder"):
        LocalService(settings, tmp_path / "file.md", Metrics(), watch=False)
