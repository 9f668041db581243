"""The Ask page's "use tools" in a real Chromium: a real server process whose model is the
scripted OpenAI-compatible server over real HTTP, the pinned npm filesystem MCP server over
stdio and knowhub's own tools; each tool call shown as it runs, the answer cited."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from knowhub.testing.llm_server import Reply, ToolReply, serve
from tests.agent_helpers import filesystem_server_bin
from tests.console_helpers import open_ask, screenshots
from tests.helpers import write
from tests.http_helpers import FULL, TOKEN_ENV, ApiServer, api_server, build_corpus

QUESTION = "Read the incident log and tell me how often backups run"


@dataclass
class Site:
    server: ApiServer
    log: Path
    incident: str  # what only reading the log can tell


def _script(log: Path) -> Any:
    def script(body: dict[str, Any]) -> Reply:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return [
                ToolReply("files__read_text_file", {"path": str(log)}),
                ToolReply("knowhub__search", {"query": "How often do database backups run?"}),
            ]
        found = re.search(r"INC-\w+", results[0])
        cited = "[1]" if "[1] Operations" in results[1] else "(no source)"
        return f"The log reports {found.group(0) if found else 'nothing'}; backups run {cited}."

    return script


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("ask-tools")
    data = build_corpus(root)
    incident = f"INC-{uuid.uuid4().hex[:8]}"
    log = write(root / "ops/incident.log", f"03:12 {incident} db01: backup job failed\n")
    files = {"command": str(filesystem_server_bin()), "args": [str(root / "ops")]}
    config = write(root / "mcp.json", json.dumps({"mcpServers": {"files": files}}))
    with serve(script=_script(log)) as llm:
        env = {
            **TOKEN_ENV,
            "KNOWHUB_LLM__PROVIDER": "openai",
            "KNOWHUB_LLM__BASE_URL": llm.openai_base,
            "KNOWHUB_LLM__MODEL": "gpt-4o-mini",
            "KNOWHUB_LLM__BACKOFF_S": "0",
            "KNOWHUB_AGENT__MCP_CONFIG": str(config),
        }
        with api_server(cwd=root, data_dir=data, env=env, token=FULL) as server:
            yield Site(server, log, incident)


@pytest.fixture
def page(context: BrowserContext, site: Site) -> Page:
    return open_ask(context, site.server.url, FULL)


def test_a_question_with_tools_shows_each_call_and_a_cited_answer(page: Page, site: Site) -> None:
    page.check("#tools")
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    turn = page.locator("#conversation .turn").first
    expect(turn.locator(".answer")).to_have_attribute("data-done", "1")
    calls = turn.locator(".tools-log li")
    expect(calls).to_have_count(2)
    expect(calls.nth(0)).to_contain_text("files/read_text_file")
    expect(calls.nth(0)).to_contain_text("incident.log")
    expect(calls.nth(0)).to_contain_text(" chars, ")  # its result arrived
    expect(calls.nth(1)).to_contain_text("knowhub/search")
    answer = turn.locator(".answer")
    expect(answer).to_contain_text(f"The log reports {site.incident}; backups run [1].")
    expect(answer.locator("a.cite")).to_have_attribute("href", re.compile(r"^/ui/source/"))
    expect(turn.locator(".sources li").first).to_contain_text("ops.md")
    screenshots(page, "ask-tools", [".tools-log li", ".answer a.cite", ".sources li"])

    turn.locator(".diag summary").click()
    turn.locator(".diag a.trace-link").click()
    expect(page.locator("h1")).to_contain_text("Chat")
    steps = page.locator("#steps tr.step")
    expect(steps).to_have_count(2)
    expect(steps.nth(0)).to_contain_text("files/read_text_file")


def test_tools_with_filters_say_what_to_change(page: Page) -> None:
    page.check("#tools")
    page.fill("#filters", "team=ops")
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#stream-error")).to_contain_text("filters apply to plain answers")
