"""``knowhub serve mcp`` over stdio: a real server process, the official SDK client.

Each test (each class: TestEveryToolOverStdio's share one) starts its own server on a small
corpus (English, Chinese, Russian) with the hashing embedder; a start takes a second or two.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client

from tests.helpers import WAIT_S, cli_env, spawned, write
from tests.mcp_helpers import DATA_TOOLS, eventually, local_tools, wait_until
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


HIT_FIELDS = {
    "n",
    "chunk_id",
    "score",
    "relevance",
    "text",
    "source",
    "url",
    "title",
    "page",
    "section_path",
    "line_start",
    "line_end",
    "char_start",
    "char_end",
    "source_hash",
    "collection",
    "truncated",
    "image",
    "enrichment",
}

ProgressNote = tuple[float, float | None, str | None]


# -- 1. every tool -------------------------------------------------------------------


@dataclass
class _Served:
    """The shared server of :class:`TestEveryToolOverStdio`, after its set-up calls."""

    client: Client
    docs: Path
    ingested: list[dict[str, Any]]  # the reports of the set-up's ingest calls, in order


class TestEveryToolOverStdio:
    """Every tool, on one server: its corpus indexed, and "extra" ingested, once."""

    @pytest.fixture(scope="class")
    @classmethod
    def anyio_backend(cls) -> str:
        return "asyncio"  # class-scoped, so that the server below spans the class

    @pytest.fixture(scope="class")
    @classmethod
    async def served(cls, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[_Served]:
        root = make_corpus(tmp_path_factory.mktemp("every-tool"))
        async with serve(root) as client:
            await indexed(client, len(CORPUS))
            tagged = [
                {"path": f"teams/{team}", "collection": "extra", "tags": {"team": team}}
                for team in ("ops", "dev", "qa", "ops")  # ops twice: unchanged the second time
            ]
            reports = [await call(client, "ingest", **args) for args in tagged]
            yield _Served(client, root / "docs", reports)

    async def test_tools_are_listed_with_their_hints_and_schema(
        self, served: _Served, tmp_path: Path
    ) -> None:
        listed = (await served.client.list_tools()).tools
        assert [t.name for t in listed] == await local_tools(tmp_path)  # each once, in order
        for tool in listed:
            hints = tool.annotations
            assert hints is not None, tool.name
            if tool.name == "ingest":
                assert hints.read_only_hint is False
            else:
                assert hints.read_only_hint is True, tool.name
            assert hints.destructive_hint is False, tool.name
        schema = next(t for t in listed if t.name == "query_knowledge_hub").input_schema
        assert schema["required"] == ["query"]
        assert {"top_k", "collection", "filters", "min_score", "max_chars"} <= set(
            schema["properties"]
        )

    async def test_each_language_finds_its_document_first(self, served: _Served) -> None:
        for question, source in QUESTIONS:
            hits = await search(served.client, question, top_k=3)
            assert hits, question
            assert hits[0]["source"] == source, (question, [h["source"] for h in hits])

    async def test_hits_carry_every_field_best_first(self, served: _Served) -> None:
        hits = await search(served.client, QUESTIONS[0][0], top_k=4)
        assert len(hits) == 4
        for n, hit in enumerate(hits, start=1):
            assert set(hit) == HIT_FIELDS
            assert hit["n"] == n
            assert hit["collection"] == "default"
            assert hit["score"] > 0
            assert re.fullmatch(r"[0-9a-f]{64}", hit["source_hash"])
            assert 1 <= hit["line_start"] <= hit["line_end"]
            assert 0 <= hit["char_start"] < hit["char_end"]
            assert hit["page"] is None  # text formats have no pages
            assert hit["truncated"] is False
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
        assert hits[0]["section_path"].startswith("Backups")
        text = await markdown(served.client, "query_knowledge_hub", query=QUESTIONS[0][0], top_k=4)
        for hit in hits:
            assert f"[{hit['n']}]" in text
            assert hit["chunk_id"] in text
        assert "backups.md" in text

    async def test_max_chars_bounds_the_markdown_and_every_passage(self, served: _Served) -> None:
        unbounded = await call(served.client, "query_knowledge_hub", query="escalation", top_k=5)
        assert unbounded["truncated"] is False
        assert sum(len(h["text"]) for h in unbounded["hits"]) > 600
        raw = await served.client.call_tool(
            "query_knowledge_hub", {"query": "escalation", "top_k": 5, "max_chars": 600}
        )
        bounded = raw.structured_content
        assert bounded is not None and bounded["truncated"] is True
        assert len(raw.content[0].text) <= 600  # type: ignore[union-attr]
        assert 1 <= len(bounded["hits"]) < len(unbounded["hits"]) or any(
            h["truncated"] for h in bounded["hits"]
        )
        assert bounded["hits"][0]["chunk_id"] == unbounded["hits"][0]["chunk_id"]

    async def test_ingest_adds_tagged_subfolders_once(self, served: _Served) -> None:
        # Paths relative to the docs root; the set-up ingested each folder, then ops again.
        *reports, again = served.ingested
        for report in reports:
            assert report["collection"] == "extra"
            assert len(report["added"]) == 1, report
            assert report["failed"] == []
            assert report["chunks"] >= 1
        assert (again["added"], again["updated"], again["unchanged"]) == ([], [], 1)

    async def test_tag_filters_select_and_bad_ones_are_refused(self, served: _Served) -> None:
        client = served.client

        async def extra(**args: Any) -> list[dict[str, Any]]:
            return await search(client, "escalation", collection="extra", top_k=10, **args)

        def refused(filters: dict[str, Any]) -> dict[str, Any]:
            return {"query": "escalation", "collection": "extra", "filters": filters}

        assert _teams(await extra()) == {"ops", "dev", "qa"}
        assert _teams(await extra(filters={"team": "ops"})) == {"ops"}
        assert _teams(await extra(filters={"team": {"in": ["ops", "dev"]}})) == {"ops", "dev"}
        assert await extra(filters={"team": "sales"}) == []
        query = "query_knowledge_hub"
        await fails(client, query, refused({"team": {"gt": 1}}), "filters.team", '{"in"')
        english = await extra(filters={"lang": {"in": ["en"]}})  # the schema's own example key
        assert _teams(english) == {"ops", "dev", "qa"}
        await fails(client, query, refused({"teem": "ops"}), "unknown key 'teem'", "team")

    async def test_search_docs_searches_the_default_collection(self, served: _Served) -> None:
        found = await call(served.client, "search_docs", query=QUESTIONS[1][0], limit=2)
        assert found["collection"] == "default"
        assert 1 <= len(found["hits"]) <= 2
        assert found["hits"][0]["source"] == "deploy.txt"

    async def test_list_collections_counts_each_collection(self, served: _Served) -> None:
        listing = await call(served.client, "list_collections")
        by_name = {c["name"]: c for c in listing["collections"]}
        assert set(by_name) == {"default", "extra"}
        assert by_name["default"]["documents"] == len(CORPUS)
        assert by_name["extra"]["documents"] == 3
        for info in by_name.values():
            assert info["chunks"] >= info["documents"]
            assert info["lexical_index"] is True
            assert info["embedder"].startswith("hashing")
            assert info["active_version"] >= 1

    async def test_document_summary_by_full_hash_and_by_a_prefix(self, served: _Served) -> None:
        client = served.client
        hit = (await search(client, QUESTIONS[0][0], top_k=1))[0]
        full = await call(client, "get_document_summary", source_hash=hit["source_hash"])
        short = await call(client, "get_document_summary", source_hash=hit["source_hash"][:8])
        assert full == short
        assert full["source_hash"] == hit["source_hash"]
        assert full["source"] == "backups.md"
        assert full["collection"] == "default"
        assert full["status"] == "indexed"
        assert full["chunk_count"] >= 1
        on_disk = (served.docs / "backups.md").read_text(encoding="utf-8")
        assert 0.5 * len(on_disk) <= full["total_chars"] <= len(on_disk)
        assert full["average_chunk_chars"] == round(full["total_chars"] / full["chunk_count"], 1)
        assert re.match(r"\d{4}-\d{2}-\d{2}", full["ingested_at"])

    async def test_get_content_gives_the_text_on_its_line_span(self, served: _Served) -> None:
        client, docs = served.client, served.docs
        for question, source in QUESTIONS:
            hit = (await search(client, question, top_k=1))[0]
            content = await call(client, "get_content", chunk_id=hit["chunk_id"])
            assert content["chunk_id"] == hit["chunk_id"]
            assert content["source"] == source
            assert content["source_hash"] == hit["source_hash"]
            lines = (docs / source).read_text(encoding="utf-8").splitlines()
            span = "\n".join(lines[content["line_start"] - 1 : content["line_end"]])
            assert content["text"].strip(), source
            assert content["text"] in span, (source, content["line_start"], content["line_end"])
            assert span.strip() == content["text"].strip(), source
        restore = (await search(client, "restore drills row counts", top_k=1))[0]
        assert restore["source"] == "backups.md"
        assert restore["line_start"] > 1  # a later section, not the file's start
        content = await call(client, "get_content", chunk_id=restore["chunk_id"])
        lines = (docs / "backups.md").read_text(encoding="utf-8").splitlines()
        assert "Restore drills" in "\n".join(lines[content["line_start"] - 1 : content["line_end"]])


def _teams(found: list[dict[str, Any]]) -> set[str]:
    assert all(h["collection"] == "extra" for h in found)
    return {Path(h["source"]).name.split("-")[0] for h in found}


# -- 2. progress ---------------------------------------------------------------------


async def test_progress_names_stages_and_counts_chunks_embedded(tmp_path: Path) -> None:
    batch = {
        f"batch/part{i}.md": f"# Part {i}\n\nBatch file number {i} of four.\n" for i in range(4)
    }
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"], **batch})
    async with serve(root, env={"KNOWHUB_INGEST__PROGRESS_INTERVAL_S": "0"}) as client:
        await indexed(client, 5)
        # The first sync's progress goes to the server log, as `knowhub ingest` shows it.
        docs, log = re.escape(str((root / "docs").resolve())), root / "stderr.log"
        synced = rf"indexing {docs}: (\d+)/\1 chunks embedded \(100\.0 %\), 5/5 files"
        await eventually(async_true(lambda: re.search(synced, log.read_text(encoding="utf-8"))))

        notes: list[ProgressNote] = []

        async def record(progress: float, total: float | None, message: str | None) -> None:
            notes.append((progress, total, message))

        result = await client.call_tool(
            "query_knowledge_hub",
            {"query": "nightly backup of PostgreSQL"},
            progress_callback=record,
        )
        assert not result.is_error
        await eventually(async_true(lambda: len(notes) >= 4))
        messages = [m or "" for _, _, m in notes]
        stages = [m.split(":")[0] for m in messages]
        assert stages == ["routing", "lexical", "dense", "fusion"], messages
        for message in messages:
            assert re.fullmatch(r"\w+: \d+ hits in \d+(\.\d+)? ms", message), message
        assert [p for p, _, _ in notes] == sorted(p for p, _, _ in notes)
        assert re.search(r"fusion: [1-9]\d* hits", messages[-1])

        notes.clear()
        result = await client.call_tool(
            "ingest", {"path": "batch", "collection": "batch"}, progress_callback=record
        )
        assert not result.is_error
        # In chunks (one a part; the first sync embedded them already, so they come from the
        # cache), rising; the total once every file is chunked.
        await eventually(async_true(lambda: notes and notes[-1][:2] == (4, 4)))
        assert [p for p, _, _ in notes] == sorted({p for p, _, _ in notes})
        assert all(t in (None, 4) for _, t, _ in notes)
        last = notes[-1][2] or ""
        assert last.startswith("ingesting: 0/0 chunks embedded, 4 from cache, 4/4 files"), last


# -- 3. errors -----------------------------------------------------------------------


async def test_errors_are_tool_errors_and_the_server_goes_on(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    outside = write(tmp_path / "outside" / "secret.md", "# Secret\n\nNot for the index.\n")
    (root / "docs" / "escape").symlink_to(outside.parent, target_is_directory=True)
    async with serve(root) as client:
        await indexed(client, 1)
        hit = (await search(client, "nightly backup", top_k=1))[0]

        await fails(client, "query_knowledge_hub", {"query": ""}, "query", "at least 1")
        await fails(client, "query_knowledge_hub", {"query": "   \n\t "}, "query is empty")
        await fails(client, "query_knowledge_hub", {"query": "backup", "top_k": 99}, "top_k", "20")
        await fails(client, "search_docs", {"query": "backup", "limit": 0}, "limit")
        await fails(
            client,
            "query_knowledge_hub",
            {"query": "backup", "collection": "nope"},
            "unknown collection 'nope'",
        )
        await fails(
            client,
            "query_knowledge_hub",
            {"query": "backup", "collection": "Bad Name!"},
            "invalid collection name",
        )
        await fails(client, "get_content", {"chunk_id": "feedface_0000_00000000"}, "no chunk")
        await fails(
            client, "get_document_summary", {"source_hash": "0123456789abcdef"}, "no document"
        )
        await fails(client, "get_document_summary", {"source_hash": "abc"}, "too short")
        await fails(client, "ingest", {"path": "../outside"}, "contains '..'")
        await fails(client, "ingest", {"path": str(outside.parent)}, "outside the document root")
        await fails(client, "ingest", {"path": str(outside)}, "outside the document root")
        await fails(client, "ingest", {"path": "escape"}, "outside the document root")
        await fails(client, "ingest", {"path": "escape/secret.md"}, "outside the document root")
        await fails(client, "ingest", {"path": "no/such/folder"}, "does not exist")

        # Still serving, and nothing from outside the root got in.
        assert (await search(client, "nightly backup", top_k=1))[0]["chunk_id"] == hit["chunk_id"]
        for found in await search(client, "secret not for the index", top_k=10):
            assert "Not for the index" not in found["text"]
        listing = await call(client, "list_collections")
        assert [c["name"] for c in listing["collections"]] == ["default"]


# -- 4. stdout carries protocol only ------------------------------------------------


def test_stdout_carries_only_protocol(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    command = [sys.executable, "-m", "knowhub", "--data-dir", str(root / "data")]
    with spawned(
        [*command, "serve", "mcp", "--docs", str(root / "docs")],
        cwd=root,
        env=cli_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    ) as process:
        out, err = _talk_raw(process)
    assert process.returncode == 0, "".join(err)
    assert out, "no output at all"
    messages = []
    for line in out:
        message = json.loads(line)  # every stdout line is JSON …
        assert isinstance(message, dict)
        assert message.get("jsonrpc") == "2.0", line  # … and JSON-RPC
        messages.append(message)
    ids = [m.get("id") for m in messages if "id" in m]
    assert {1, 2, 3} <= set(ids)
    assert set(ids) <= {1, 2, 3, None}
    for message in messages:
        if message.get("id") is None and "error" in message:
            assert message["error"]["code"] == -32700, message  # the garbage line: parse error
    stderr = "".join(err)
    assert re.search(
        r"1 added, 0 updated, 0 removed, 0 unchanged, 0 failed, [1-9]\d* embedded", stderr
    )
    assert "INFO knowhub.mcp" in stderr
    assert not any("INFO" in line or "Traceback" in line for line in out)


def _talk_raw(process: subprocess.Popen[str]) -> tuple[list[str], list[str]]:
    """Initialize, list the tools, send a broken line, search; then end the server as a
    client does (stdin closed). Returns its stdout and stderr lines."""
    out: list[str] = []
    err: list[str] = []
    readers = [_drain(process.stdout, out), _drain(process.stderr, err)]
    assert process.stdin is not None
    stdin = process.stdin

    def send(message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        stdin.write(line + "\n")
        stdin.flush()

    def answer(request_id: int) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            for line in list(out):
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message
            return None

        found: dict[str, Any] = wait_until(find)
        return found

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "0"},
                },
            }
        )
        init = answer(1)
        assert init["result"]["serverInfo"]["name"] == "knowhub"
        assert "tools" in init["result"]["capabilities"]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        wait_until(lambda: any(" added, " in line for line in err))
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        send("{not json")
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "query_knowledge_hub", "arguments": {"query": "nightly backup"}},
            }
        )
        tools = answer(2)["result"]["tools"]
        assert [tool["name"] for tool in tools] == list(DATA_TOOLS)
        called = answer(3)["result"]
        assert called.get("isError") is not True
        assert called["structuredContent"]["hits"][0]["source"] == "backups.md"
    finally:
        stdin.close()  # anything late (a log line, a stray print) is read before its end
        process.wait(timeout=WAIT_S)  # else spawned() stops it
        for reader in readers:
            reader.join(timeout=WAIT_S)
    return out, err


def _drain(stream: IO[str] | None, into: list[str]) -> threading.Thread:
    assert stream is not None

    def run() -> None:
        for line in stream:
            into.append(line)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# -- 5. a restart embeds nothing ----------------------------------------------------


async def test_restart_embeds_nothing(tmp_path: Path) -> None:
    root = make_corpus(tmp_path)
    async with serve(root, stderr="first.log") as client:
        await indexed(client, len(CORPUS))
        before = await call(client, "list_collections")
    first = (root / "first.log").read_text(encoding="utf-8")
    n = len(CORPUS)
    embedded = rf"{n} added, 0 updated, 0 removed, 0 unchanged, 0 failed, [1-9]\d* embedded"
    assert re.search(embedded, first), first

    log = root / "second.log"
    async with serve(root, "--log-file", str(log), stderr="second-stderr.log") as client:
        wait_for = re.compile(r"\d+ added, .* embedded")
        await eventually(
            async_true(lambda: log.exists() and wait_for.search(log.read_text("utf-8")))
        )
        after = await call(client, "list_collections")
        hits = await search(client, QUESTIONS[0][0], top_k=1)
    second = log.read_text(encoding="utf-8")
    nothing = rf"0 added, 0 updated, 0 removed, {n} unchanged, 0 failed, 0 embedded"
    assert re.search(nothing, second), second
    assert after == before  # same documents, chunks and version: nothing was rewritten
    assert hits[0]["source"] == QUESTIONS[0][1]
    assert "added" not in (root / "second-stderr.log").read_text(encoding="utf-8")


async def test_watching_follows_adds_edits_and_deletes(tmp_path: Path) -> None:
    files = {"backups.md": CORPUS["backups.md"], "deploy.txt": CORPUS["deploy.txt"]}
    root = make_corpus(tmp_path, files)
    note = root / "docs" / "notes" / "fresh.md"
    async with serve(root) as client:
        await indexed(client, 2)

        async def texts(word: str) -> str:
            return "\n".join(h["text"] for h in await search(client, word, top_k=10))

        write(note, "# Fresh\n\nThe zephyrquokka service answers on port 7070.\n")

        async def added() -> bool:
            return "zephyrquokka" in await texts("zephyrquokka")

        await eventually(added)
        hits = await search(client, "zephyrquokka", top_k=1)
        assert hits[0]["source"] == "notes/fresh.md"
        assert await documents(client) == 3

        write(note, "# Fresh\n\nThe marmotblizzard service answers on port 7070.\n")

        async def edited() -> bool:
            return "marmotblizzard" in await texts("marmotblizzard")

        await eventually(edited)
        assert "zephyrquokka" not in await texts("zephyrquokka")
        assert "zephyrquokka" not in await texts("service port 7070")
        assert await documents(client) == 3

        note.unlink()

        async def deleted() -> bool:
            return await documents(client) == 2

        await eventually(deleted)
        assert "marmotblizzard" not in await texts("marmotblizzard")
        assert all(h["source"] != "notes/fresh.md" for h in await search(client, "service port"))


# -- 7. read-only -------------------------------------------------------------------


async def test_read_only_offers_no_ingest(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    async with serve(root, "--read-only") as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == await local_tools(tmp_path / "listed", read_only=True)
        assert "ingest" not in {t.name for t in tools}
        assert all(t.annotations and t.annotations.read_only_hint for t in tools)
        await indexed(client, 1)  # read-only still indexes its own folder
        result = await client.call_tool("ingest", {"path": "."})
        assert result.is_error
        assert "ingest" in result.content[0].text  # type: ignore[union-attr]
        assert (await search(client, "nightly backup", top_k=1))[0]["source"] == "backups.md"


# -- 8. what the served folder holds ---------------------------------------------------


@pytest.mark.timeout(3 * WAIT_S)  # a hang fails here, not at the suite's 600 s
async def test_fifos_and_links_leading_out_are_skipped_at_start_by_the_watcher_and_ingest(
    tmp_path: Path,
) -> None:
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    docs = root / "docs"
    os.mkfifo(docs / "x.txt")  # the first sync blocked on it forever
    outside = write(tmp_path / "outside" / "secret.md", "# Vault\n\nThe vault code is 4711.\n")
    (docs / "leak.md").symlink_to(outside)
    (docs / "loop.md").symlink_to(docs / "loop.md")
    async with serve(root) as client:
        await indexed(client, 1)
        # The watcher re-syncs through the same discovery: a new FIFO cannot stop it.
        os.mkfifo(docs / "y.md")
        write(docs / "late.md", "# Late\n\nThe zephyrquokka answers on port 7070.\n")
        await indexed(client, 2)
        assert all("4711" not in h["text"] for h in await search(client, "vault code", top_k=10))

        out = await call(client, "ingest", path=".")
        reasons = {s["source"]: s["reason"] for s in out["skipped"]}
        assert set(reasons) == {"x.txt", "y.md", "leak.md", "loop.md"}
        assert reasons["x.txt"].startswith("x.txt: is a FIFO (named pipe), not a regular file")
        assert reasons["leak.md"].startswith(f"leak.md: leads outside {docs.resolve()}")
        assert "- skipped leak.md: leads outside" in await markdown(client, "ingest", path=".")
        named = await call(client, "ingest", path="x.txt")
        assert named["failed"] == [{"source": "x.txt", "reason": reasons["x.txt"]}]
        await fails(client, "ingest", {"path": "loop.md"}, "path 'loop.md' cannot be resolved")
        await fails(client, "ingest", {"path": "a\x00"}, "path 'a\\x00' contains a NUL")
    log = (root / "stderr.log").read_text(encoding="utf-8")
    assert "skipped x.txt: is a FIFO (named pipe)" in log
    assert "skipped leak.md: leads outside" in log
