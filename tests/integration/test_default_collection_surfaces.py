"""Every interface resolves a request that names no collection by the same rule.

``knowhub.default_collection``: the configured collection; for a token limited to one
collection, that one; with nothing configured and no ``default``, the only collection there
is (the data dirs here hold ``kb`` alone, as after ``knowhub import``). Each surface in
turn, each through a real process: the HTTP API, the web console's pages, ``knowhub chat``'s
search tool, ``knowhub bench load``, the CLI with ``--as-token``. (The MCP tools: in
test_mcp_collections.py and test_mcp_http.py.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowhub.testing.llm_server import Reply, ToolReply, serve
from tests.helpers import knowhub, write
from tests.http_helpers import ApiServer, api_server

KB = "# Backups\n\nDatabase backups run every 6 hours and are kept for 35 days.\n"
BOARD = "# Board minutes\n\nThe orchid merger closes in spring.\n"
TOKENS = [
    {"name": "board", "token_env": "KH_T_BOARD", "collections": ["private"]},
    {"name": "two", "token_env": "KH_T_TWO", "collections": ["private", "kb"]},
    {"name": "full", "token_env": "KH_T_FULL"},
]
SECRETS = {"KH_T_BOARD": "board-7Ghq2LxP0vNm", "KH_T_TWO": "two-4Jd8sWq1ZcRt", "KH_T_FULL": "f-9"}
TOKEN_ENV = {"KNOWHUB_SERVER__TOKENS": json.dumps(TOKENS), **SECRETS}


def _ingest(root: Path, folder: str, collection: str, text: str) -> None:
    write(root / folder / "notes.md", text)
    made = knowhub("--data-dir", "data", "ingest", folder, "-c", collection, cwd=root)
    assert made.returncode == 0, made.stderr


@pytest.fixture(scope="module")
def only_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """``serve http`` on a data dir holding only ``kb``; no config, no token."""
    root = tmp_path_factory.mktemp("only-kb")
    _ingest(root, "docs", "kb", KB)
    with api_server(cwd=root, data_dir=root / "data") as server:
        yield server


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    """``serve http`` on ``default``, ``kb`` and ``private``, with limited tokens."""
    root = tmp_path_factory.mktemp("tokens")
    _ingest(root, "docs", "default", "# Ops\n\nThe VPN is needed for the console.\n")
    _ingest(root, "more", "kb", KB)
    _ingest(root, "private", "private", BOARD)
    with api_server(cwd=root, data_dir=root / "data", env=TOKEN_ENV) as server:
        yield server


def _sources(response: Any) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.text
    return [(h["collection"], h["source"]) for h in response.json()["hits"]]


# -- nothing configured: the only collection there is -----------------------------------


def test_http_api_searches_the_only_collection_when_none_is_named(only_kb: ApiServer) -> None:
    found = only_kb.post("/api/search", json={"query": "how long are backups kept"})
    assert _sources(found) == [("kb", "notes.md")]
    assert only_kb.get("/api/documents").json()["collection"] == "kb"
    asked = only_kb.post("/api/ask", json={"question": "how long are backups kept?"})
    assert asked.status_code == 200, asked.text


def test_console_pages_use_the_only_collection_when_none_is_named(only_kb: ApiServer) -> None:
    page = only_kb.get("/ui/search", params={"q": "how long are backups kept"})
    assert page.status_code == 200, page.text
    assert "notes.md" in page.text and "unknown collection" not in page.text
    documents = only_kb.get("/ui/documents")
    assert documents.status_code == 200 and "notes.md" in documents.text
    # The upload form offers the collection the pages read (an upload names the one chosen;
    # a CLI ingest naming none still creates `default` rather than guess).
    upload = only_kb.get("/ui/upload")
    assert upload.status_code == 200, upload.text
    assert re.findall(r'<option value="([^"]*)" selected>', upload.text) == ["kb"]


def test_bench_load_without_a_collection_uses_the_servers(only_kb: ApiServer) -> None:
    root = only_kb.log.parent
    run = knowhub(
        "bench",
        "load",
        "--url",
        only_kb.url,
        "--endpoints",
        "search,ask",
        "--clients",
        "1",
        "--max-requests",
        "4",  # what ends the run; the bounds below only keep a loaded machine from failing it
        "--duration",
        "120",
        "--timeout",
        "120",
        "--no-server-stats",
        "--out",
        "bench-report",
        cwd=root,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((root / "bench-report/report.json").read_text(encoding="utf-8"))
    assert report["run"]["collection"] == "kb"
    assert report["total"]["ok"] == report["total"]["requests"] > 0, report["total"]


def test_chat_searches_the_only_collection_when_none_is_named(only_kb: ApiServer) -> None:
    root = only_kb.log.parent

    def script(body: dict[str, Any]) -> Reply:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return [ToolReply("knowhub__search", {"query": "backups kept"})]
        return "Kept 35 days [1]." if "35 days" in results[0] else f"failed: {results[0]}"

    with serve(script=script) as llm:
        env = {
            "KNOWHUB_LLM__PROVIDER": "openai",
            "KNOWHUB_LLM__BASE_URL": llm.openai_base,
            "KNOWHUB_LLM__MODEL": "gpt-4o-mini",
        }
        chat = knowhub("--data-dir", "data", "chat", "how long?", "--json", cwd=root, env=env)
    assert chat.returncode == 0, chat.stderr
    out = json.loads(chat.stdout)
    assert out["answer"] == "Kept 35 days [1].", out
    assert [c["source"] for c in out["citations"]] == ["notes.md"]


# -- limited tokens ---------------------------------------------------------------------


def test_a_token_limited_to_one_collection_defaults_to_it(tokens: ApiServer) -> None:
    board = SECRETS["KH_T_BOARD"]
    found = tokens.post("/api/search", board, json={"query": "orchid merger"})
    assert _sources(found) == [("private", "notes.md")]
    assert tokens.get("/api/documents", board).json()["collection"] == "private"
    asked = tokens.post("/api/ask", board, json={"question": "when does the merger close?"})
    assert asked.status_code == 200, asked.text
    page = tokens.get("/ui/search", board, params={"q": "orchid merger"})
    assert page.status_code == 200 and "orchid" in page.text, page.text
    upload = tokens.get("/ui/upload", board)
    assert re.search(r'<option value="private"[^>]*selected', upload.text), upload.text
    # The unrestricted token still gets the configured default.
    full = tokens.post("/api/search", SECRETS["KH_T_FULL"], json={"query": "VPN console"})
    assert _sources(full) == [("default", "notes.md")]


def test_a_token_limited_to_several_is_told_to_name_one(tokens: ApiServer) -> None:
    two = SECRETS["KH_T_TWO"]
    refused = tokens.post("/api/search", two, json={"query": "orchid"})
    assert refused.status_code == 400, refused.text
    message = refused.json()["error"]
    assert "this token may read several (kb, private): name one" in message
    assert "default" not in message  # the configured one: this token may not read it
    named = tokens.post("/api/search", two, json={"query": "orchid", "collection": "private"})
    assert _sources(named) == [("private", "notes.md")]


def test_cli_as_a_token_limited_to_one_collection_defaults_to_it(tokens: ApiServer) -> None:
    root = tokens.log.parent
    argv = ["--data-dir", "data", "--as-token", "board", "search", "orchid", "--json"]
    found = knowhub(*argv, cwd=root, env=TOKEN_ENV)
    assert found.returncode == 0, found.stderr
    assert [h["collection"] for h in json.loads(found.stdout)] == ["private"]
