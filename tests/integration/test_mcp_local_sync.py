"""Local mode's folder sync over real MCP stdio: a renamed folder serves each document once,
and while the first sync runs every result says so."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import WAIT_S, embedder_plugin
from tests.mcp_helpers import eventually
from tests.mcp_stdio_helpers import (
    CORPUS,
    QUESTIONS,
    async_true,
    call,
    documents,
    fails,
    indexed,
    make_corpus,
    markdown,
    search,
    serve,
)

pytestmark = pytest.mark.anyio


async def test_a_renamed_docs_folder_serves_each_document_once(tmp_path: Path) -> None:
    files = {"backups.md": CORPUS["backups.md"], "deploy.txt": CORPUS["deploy.txt"]}
    root = make_corpus(tmp_path, files)
    question, source = QUESTIONS[0]
    async with serve(root, stderr="first.log") as client:
        await indexed(client, len(files))
        [before] = await search(client, question, top_k=1)
    (root / "docs").rename(root / "Docs")  # as `mv notes Notes` and a restart on Notes

    log = root / "second.log"
    async with serve(root, "--log-file", str(log), docs="Docs") as client:
        synced = re.compile(r"\d+ added, .* embedded")
        await eventually(async_true(lambda: log.exists() and synced.search(log.read_text("utf-8"))))
        hits = await search(client, question, top_k=5)
        count = await documents(client)
        content = await call(client, "get_content", chunk_id=before["chunk_id"])
    assert count == len(files)
    assert len({h["chunk_id"] for h in hits}) == len(hits)  # no hit twice
    assert [h["chunk_id"] for h in hits].count(before["chunk_id"]) == 1
    assert content["source"] == source  # the same chunk id, now at the new path
    assert re.search(r"0 added, .* 0 embedded, 2 moved", log.read_text("utf-8"))


# -- 6. the folder is watched -------------------------------------------------------


GATED_EMBEDDER = '''
import os
import re
import time
from pathlib import Path

from knowhub.providers.embedders.hashing import HashingEmbedder


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder, holding any passage with the word "gated" until the test
    opens the gate (creates GATE_FILE): an initial sync that stays in progress."""

    def _encode(self, texts, is_query):
        gate = Path(os.environ["GATE_FILE"])
        deadline = time.monotonic() + float(os.environ["GATE_WAIT_S"])
        while not is_query and any("gated" in t for t in texts) and not gate.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the test never opened the gate")
            time.sleep(0.01)
        return super()._encode(texts, is_query)


def create(settings):
    return GatedEmbedder(64)
'''


def gated_env(tmp_path: Path, gate: Path, **settings: str) -> dict[str, str]:
    """Server env whose embedder is the gated plugin (an entry point on the path)."""
    path = embedder_plugin(tmp_path / "plugin", "gated", GATED_EMBEDDER)
    env = {
        "PYTHONPATH": path,
        "GATE_FILE": str(gate),
        "GATE_WAIT_S": str(WAIT_S),
        "KNOWHUB_EMBEDDER__PROVIDER": "gated",
    }
    return {**env, **{f"KNOWHUB_SERVER__{k.upper()}": v for k, v in settings.items()}}


async def test_every_result_says_indexing_is_in_progress_until_the_first_sync_ends(
    tmp_path: Path,
) -> None:
    # The first query got a bare "No results" (or hits from the part indexed so far) and
    # nothing said indexing was in progress; /health knew, the agent never saw it.
    files = {f"note{i}.md": f"# Note {i}\n\nAn ordinary note, number {i}.\n" for i in range(5)}
    files["zz-vault.md"] = "# Vault\n\nThe gated vault opens with the code 4711.\n"
    root = make_corpus(tmp_path, files)
    gate = tmp_path / "gate"  # outside the served folder: the watcher never sees it
    env = gated_env(tmp_path, gate, first_sync_wait_s="0.2")
    async with serve(root, env=env) as client:

        async def listed_all() -> dict[str, Any] | None:
            now: dict[str, Any] | None = (await call(client, "list_collections"))["indexing"]
            return now if now and now["files_total"] == len(files) else None

        now = await eventually(listed_all)
        assert (now["state"], now["collection"], now["first_sync"]) == ("running", "default", True)
        assert 0 <= now["files_done"] < len(files)
        opening = "Indexing in progress (collection 'default': "
        assert (await markdown(client, "list_collections")).startswith(opening)

        for tool in ("query_knowledge_hub", "search_docs"):
            result = await client.call_tool(tool, {"query": "vault code 4711"})
            text: str = result.content[0].text  # type: ignore[union-attr]
            assert not result.is_error, text  # never "unknown collection 'default'"
            assert text.startswith(opening) and "results cover only the documents" in text
            out = result.structured_content
            assert out is not None and out["indexing"]["state"] == "running"
            assert out["indexing"]["files_total"] == len(files)
            assert "zz-vault.md" not in {h["source"] for h in out["hits"]}
        # A failure says it too: the chunk may only be missing for now.
        await fails(
            client,
            "get_content",
            {"chunk_id": "feedface_0000_00000000"},
            "no chunk",
            "indexing in progress",
        )

        gate.touch()

        async def complete() -> dict[str, Any] | None:
            out = await call(client, "query_knowledge_hub", query="vault code 4711")
            return out if out["indexing"] is None and out["hits"] else None

        done = await eventually(complete)
        assert done["hits"][0]["source"] == "zz-vault.md"
        assert not (await markdown(client, "query_knowledge_hub", query="vault")).startswith(
            "Indexing"
        )
        assert (await call(client, "list_collections"))["indexing"] is None
