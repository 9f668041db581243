"""An answer's warnings are in the text of every interface, not only in its JSON: ``knowhub
ask``, the web console's answer (the page without script, and the end event its script
draws) and the MCP ``ask`` tool's text, each through the real interface (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from knowhub.interfaces.http import create_app
from tests.helpers import fast_settings, knowhub, write
from tests.mcp_helpers import text_of
from tests.mcp_stdio_helpers import indexed, serve

pytestmark = pytest.mark.anyio

ARCHIVE = (
    "# Archive\n\nNightly backups are kept for 35 days in the archive bucket. The archive "
    "bucket keeps monthly copies for 13 months.\n"
)
# On the archive's topic (relevant enough to answer from, not by much), quoted from it; but
# it does not say how long mailboxes are kept.
QUESTION = "How long are deleted mailboxes kept in the archive bucket?"
QUOTED = "Warning: Quoted, not verified: these sentences are from the sources"
WEAK = "Warning: Weak evidence: the best source's relevance is only"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write(tmp_path / "docs/archive.md", ARCHIVE)
    return tmp_path


def test_knowhub_ask_prints_the_warnings_under_the_answer(root: Path) -> None:
    assert knowhub("ingest", "docs", cwd=root).returncode == 0
    shown = knowhub("ask", QUESTION, cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert QUOTED in shown.stdout and WEAK in shown.stdout
    assert shown.stdout.rstrip().endswith("quoted, extractive)")
    end = json.loads(knowhub("ask", QUESTION, "--json", cwd=root).stdout)
    assert end["warnings"][0].startswith("Weak evidence") and end["not_mentioned"] == []


def test_the_console_shows_the_warnings_with_the_answer(root: Path) -> None:
    assert knowhub("ingest", "docs", cwd=root).returncode == 0
    settings = fast_settings(root / "data")
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        origin = {"Sec-Fetch-Site": "same-origin"}  # as a browser sends from the page
        page = client.post("/ui/ask", data={"question": QUESTION}, headers=origin)
        assert page.status_code == 200, page.text
        shown = page.text.split('<ul class="warnings" role="note">', 1)[1].split("</ul>", 1)[0]
        assert "Quoted, not verified" in shown and "Weak evidence" in shown
        streamed = client.post("/ui/ask/stream", json={"question": QUESTION}, headers=origin)
        end = streamed.text.split("event: end\ndata: ", 1)[1].split("\n", 1)[0]
        assert any(line.startswith("Quoted, not verified") for line in json.loads(end)["warnings"])


async def test_the_mcp_ask_tool_text_carries_the_warnings(root: Path) -> None:
    async with serve(root) as client:
        await indexed(client, 1)
        result = await client.call_tool("ask", {"question": QUESTION})
        assert not result.is_error
        text = text_of(result)
        assert QUOTED in text and WEAK in text
        assert result.structured_content is not None
        assert result.structured_content["generation_verification_status"] == "quoted"
