"""``POST /api/chat`` end to end: a real ``knowhub serve http`` process, the scripted
OpenAI-compatible model over real HTTP, the pinned npm filesystem server over stdio (from
``agent.mcp_config``) and knowhub's own tools in-process.

The model's script is chosen by the question, so one model and one server serve the module;
the failure modes run in-process (one app each) with a model of their own.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fastapi.testclient import TestClient

from knowhub import load_settings
from knowhub.interfaces.http import create_app
from knowhub.testing.llm_server import LlmServer, Reply, ToolReply, serve
from knowhub.trace.jsonl import read_traces
from tests.agent_helpers import MARK, filesystem_server_bin, new_marker, processes_marked
from tests.helpers import FAST_ENV, write
from tests.http_helpers import (
    FULL,
    LIMITED,
    TOKEN_ENV,
    TOKENS,
    ApiServer,
    SseEvent,
    api_server,
    build_corpus,
    read_sse,
)
from tests.mcp_helpers import wait_until

READ_LOG = "Read the incident log and tell me how often backups run"
PEEK = "What do the board minutes say about the merger?"
FIRST = "Remember the code word heliotrope"
SECOND = "Which code word did I give you?"
TOOL_KINDS = ["step", "tool_call", "tool_result", "tool_call", "tool_result"]


@dataclass
class Kb:
    root: Path
    data: Path
    log: Path
    incident: str  # what only reading the log can tell
    marker: str  # in the environment of the filesystem servers this module starts


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Kb:
    root = tmp_path_factory.mktemp("http-chat")
    data = build_corpus(root)  # default: ops.md, hr.md; private: minutes.md
    incident = f"INC-{uuid.uuid4().hex[:8]}"
    log = write(root / "ops/incident.log", f"03:12 {incident} db01: backup job failed\n")
    return Kb(root, data, log, incident, new_marker())


def mcp_config(kb: Kb, marker: str) -> Path:
    files = {"command": str(filesystem_server_bin()), "args": [str(kb.root / "ops")]}
    servers = {"files": {**files, "env": {MARK: marker}}}
    return write(kb.root / f"mcp-{marker}.json", json.dumps({"mcpServers": servers}))


def script_for(kb: Kb) -> Any:
    """The model: what it does depends on the question (the last user message)."""

    def script(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        question = [m["content"] for m in messages if m["role"] == "user"][-1]
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if question == READ_LOG and not results:
            return [
                ToolReply("files__read_text_file", {"path": str(kb.log)}),
                ToolReply("knowhub__search", {"query": "How often do database backups run?"}),
            ]
        if question == READ_LOG:
            found = re.search(r"INC-\w+", results[0])
            cited = "[1]" if "[1] Operations" in results[1] else "(no source)"
            return f"The log reports {found.group(0) if found else 'nothing'}; backups run {cited}."
        if question == PEEK and not results:
            return [ToolReply("knowhub__search", {"query": "merger", "collection": "private"})]
        if question == PEEK:
            return "The search said: " + results[0]
        return f"answer to {question}"

    return script


@pytest.fixture(scope="module")
def llm(kb: Kb) -> Iterator[LlmServer]:
    with serve(script=script_for(kb)) as running:
        yield running


NO_TOOLS = "no-tools-Hq3mW8zR1cX5"  # a token whose chats may use no MCP server
CHAT_TOKENS = [*TOKENS, {"name": "no-tools", "token_env": "KH_TEST_NO_TOOLS", "mcp_servers": []}]


def server_env(llm: LlmServer, config: Path) -> dict[str, str]:
    return {
        **TOKEN_ENV,
        "KNOWHUB_SERVER__TOKENS": json.dumps(CHAT_TOKENS),
        "KH_TEST_NO_TOOLS": NO_TOOLS,
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__BASE_URL": llm.openai_base,
        "KNOWHUB_LLM__MODEL": "gpt-4o-mini",
        "KNOWHUB_LLM__BACKOFF_S": "0",
        "KNOWHUB_AGENT__MCP_CONFIG": str(config),
    }


@pytest.fixture(scope="module")
def server(kb: Kb, llm: LlmServer) -> Iterator[ApiServer]:
    env = server_env(llm, mcp_config(kb, kb.marker))
    with api_server(cwd=kb.root, data_dir=kb.data, env=env, token=FULL) as running:
        yield running


def chat(server: ApiServer, token: str = FULL, **body: Any) -> dict[str, Any]:
    response = server.post("/api/chat", token=token, json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def chat_sse(server: ApiServer, **body: Any) -> tuple[int, list[SseEvent]]:
    with httpx.stream(
        "POST",
        server.url + "/api/chat",
        json={**body, "stream": True},
        headers=server.headers(),
        timeout=60,
    ) as response:
        return response.status_code, read_sse(response.iter_lines())


def test_the_answer_holds_what_only_the_filesystem_server_could_read(
    kb: Kb, server: ApiServer
) -> None:
    out = chat(server, question=READ_LOG)
    assert kb.incident in out["answer"] and "[1]" in out["answer"]
    assert [(s["server"], s["tool"]) for s in out["steps"]] == [
        ("files", "read_text_file"),
        ("knowhub", "search"),
    ]
    for step in out["steps"]:
        assert {"server", "tool", "arguments", "ms", "error", "result_chars"} <= set(step)
        assert step["error"] is None and step["ms"] >= 0 and step["result_chars"] > 0
    assert out["steps"][0]["arguments"] == {"path": str(kb.log)}
    assert out["steps"][0]["result_chars"] > len(kb.incident)
    cited = out["citations"][0]
    assert cited["n"] == 1 and cited["chunk_id"] and cited["source"] == "ops.md"
    assert out["stopped"] == "answer" and out["model_calls"] == 2 and out["trace_id"]

    page = server.get(f"/ui/traces/{out['trace_id']}")
    assert page.status_code == 200, page.text
    assert "<h1>Chat <code>" in page.text and 'id="steps"' in page.text
    rows = re.findall(r'<tr class="step">(.*?)</tr>', page.text, re.S)
    assert len(rows) == 2
    assert "files/read_text_file" in rows[0] and "incident.log" in rows[0]
    assert "knowhub/search" in rows[1] and "backups" in rows[1]
    listed = server.get("/ui/traces", params={"kind": "chat"})
    assert listed.status_code == 200 and out["trace_id"] in listed.text


def test_sse_streams_the_steps_then_the_answer_and_ends_as_the_json_does(
    kb: Kb, server: ApiServer
) -> None:
    status, events = chat_sse(server, question=READ_LOG)
    assert status == 200
    kinds = [e.event for e in events]
    tokens = [e for e in events if e.event == "token"]
    assert kinds == [*TOOL_KINDS, *["token"] * len(tokens), "step", "end"], kinds
    assert len(tokens) >= 3 and {t.data["step"] for t in tokens} == {2}
    steps = [e.data for e in events if e.event == "step"]
    assert [(s["step"], s["tool_calls"]) for s in steps] == [(1, 2), (2, 0)]
    calls = [e.data for e in events if e.event == "tool_call"]
    assert [(c["server"], c["tool"]) for c in calls] == [
        ("files", "read_text_file"),
        ("knowhub", "search"),
    ]
    results = [e.data for e in events if e.event == "tool_result"]
    assert results[0]["error"] is None and results[0]["result_chars"] > len(kb.incident)
    end = events[-1].data
    assert "".join(t.data["text"] for t in tokens).strip() == end["answer"]
    assert kb.incident in end["answer"]
    whole = chat(server, question=READ_LOG)
    assert set(end) == set(whole)
    assert [(s["server"], s["tool"], s["arguments"]) for s in end["steps"]] == [
        (s["server"], s["tool"], s["arguments"]) for s in whole["steps"]
    ]
    assert end["citations"] == whole["citations"] and end["trace_id"] != whole["trace_id"]


def sent(llm: LlmServer, question: str) -> list[list[dict[str, Any]]]:
    """The messages of each request the model got for ``question`` (asked last)."""
    bodies = [r.body["messages"] for r in llm.requests]
    return [messages for messages in bodies if messages[-1]["content"] == question]


def test_a_session_sends_the_earlier_turns_to_the_model(
    server: ApiServer, llm: LlmServer, kb: Kb
) -> None:
    session = f"chat-{uuid.uuid4().hex[:8]}"
    first = chat(server, question=FIRST, session_id=session)
    second = chat(server, question=SECOND, session_id=session)
    assert second["answer"] == f"answer to {SECOND}"
    assert [(m["role"], m["content"]) for m in sent(llm, SECOND)[-1][1:]] == [
        ("user", FIRST),
        ("assistant", first["answer"]),
        ("user", SECOND),
    ]
    # Another session starts with no history.
    chat(server, question=SECOND, session_id=session + "-other")
    assert [m["role"] for m in sent(llm, SECOND)[-1]] == ["system", "user"]
    traced = {t.trace_id: t.session_id for t in read_traces(kb.data / "traces")}
    assert traced[first["trace_id"]] == traced[second["trace_id"]] == session


def test_a_token_may_chat_only_in_its_collections(server: ApiServer) -> None:
    body = {"question": PEEK, "collection": "private"}
    for stream in (False, True):
        refused = server.post("/api/chat", token=LIMITED, json={**body, "stream": stream})
        assert refused.status_code == 403, refused.text
        assert refused.headers["content-type"].startswith("application/json")
        assert "'private'" in refused.json()["error"]
    # In its own collection, the model's search of another is the tool's error, not a crash.
    out = chat(server, token=LIMITED, question=PEEK)
    (step,) = out["steps"]
    assert (step["server"], step["tool"]) == ("knowhub", "search")
    assert step["error"] == "token 'limited' may not read collection 'private'"
    assert "orchid" not in json.dumps(out) and out["citations"] == []
    assert "Error: token 'limited' may not read collection 'private'" in out["answer"]
    page = server.get(f"/ui/traces/{out['trace_id']}", token=LIMITED).text
    (row,) = re.findall(r'<tr class="step">(.*?)</tr>', page, re.S)
    assert "error: token &#39;limited&#39; may not read collection &#39;private&#39;" in row


def test_a_chats_trace_is_shown_only_to_who_may_see_all_it_reached(server: ApiServer) -> None:
    peeked = chat(server, question=PEEK)  # the full token's model searches 'private'
    read = chat(server, question=READ_LOG)  # it reads a file through the filesystem server
    for out, kept_out in ((peeked, LIMITED), (read, NO_TOOLS)):
        page = f"/ui/traces/{out['trace_id']}"
        assert server.get(page, token=FULL).status_code == 200
        assert server.get(page, token=kept_out).status_code == 404
        listed = server.get("/ui/traces?kind=chat", token=kept_out).text
        assert out["trace_id"] not in listed


def test_a_limited_token_chats_without_mcp_servers_unless_they_are_named(
    server: ApiServer, llm: LlmServer
) -> None:
    chat(server, token=LIMITED, question=READ_LOG)
    offered = [t["function"]["name"] for t in sent_tools(llm, READ_LOG)]
    assert "knowhub__search" in offered and not [t for t in offered if t.startswith("files__")]


def test_a_token_may_be_kept_from_the_mcp_servers(server: ApiServer, llm: LlmServer) -> None:
    out = chat(server, token=NO_TOOLS, question=READ_LOG)
    offered = [t["function"]["name"] for t in sent_tools(llm, READ_LOG)]
    assert "knowhub__search" in offered and not [t for t in offered if t.startswith("files__")]
    read, search = out["steps"]
    assert read["error"] is not None and "there is no tool 'files__read_text_file'" in read["error"]
    assert search["error"] is None
    assert out["citations"] and out["citations"][0]["source"] == "ops.md"


def sent_tools(llm: LlmServer, question: str) -> list[dict[str, Any]]:
    """The tools offered with the last request for ``question``."""
    bodies = [r.body for r in llm.requests if r.body["messages"][-1]["content"] == question]
    tools: list[dict[str, Any]] = bodies[-1].get("tools", [])
    return tools


def test_the_mcp_servers_start_on_the_first_chat_and_stop_with_the_server(
    kb: Kb, llm: LlmServer
) -> None:
    marker = new_marker()
    env = server_env(llm, mcp_config(kb, marker))
    with api_server(cwd=kb.root, data_dir=kb.data, env=env, token=FULL) as server:
        assert processes_marked(marker) == []  # lazily: none before the first chat
        chat(server, question=FIRST)
        started = processes_marked(marker)
        assert started
        chat(server, question=SECOND)
        assert processes_marked(marker) == started  # the same servers, kept up
    wait_until(lambda: processes_marked(marker) == [], interval=0.1)
    assert "Traceback" not in server.logs()


# -- failures, in-process ----------------------------------------------------------------------


def client_for(kb: Kb, **overrides: Any) -> TestClient:
    settings = load_settings(env=FAST_ENV, overrides={"data_dir": kb.data, **overrides})
    return TestClient(create_app(settings), base_url="http://127.0.0.1")


def sse_events(client: TestClient, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", "/api/chat", json={**body, "stream": True}) as response:
        assert response.status_code == 200
        return [(e.event, e.data) for e in read_sse(response.iter_lines())]


def test_without_a_model_a_chat_is_an_error_naming_llm_provider(kb: Kb) -> None:
    with client_for(kb) as client:
        for stream in (False, True):
            response = client.post("/api/chat", json={"question": FIRST, "stream": stream})
            # Sound input to a server not set up for it: a 4xx naming the setting (a 5xx
            # would say "try again"), before any stream.
            assert response.status_code == 409, response.text
            error = response.json()
            assert error["status"] == 409 and "set llm.provider to openai" in error["error"]


def test_a_failing_model_is_a_502_before_the_stream_or_its_last_event_after(kb: Kb) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if any(m["role"] == "tool" for m in body["messages"]):
            raise RuntimeError("the model fell over")  # answered 500 by the server
        return [ToolReply("knowhub__list_collections", {})]

    llm_settings = {"llm.provider": "openai", "llm.model": "gpt-4o-mini", "llm.max_retries": 0}
    with (
        serve(fail="500", times=None) as llm,
        client_for(kb, **llm_settings, **{"llm.base_url": llm.openai_base}) as client,
    ):
        for stream in (False, True):
            response = client.post("/api/chat", json={"question": FIRST, "stream": stream})
            assert response.status_code == 502, response.text
            assert response.json()["error"].startswith("llm openai: ")
    with (
        serve(script=script) as llm,
        client_for(kb, **llm_settings, **{"llm.base_url": llm.openai_base}) as client,
    ):
        events = sse_events(client, {"question": FIRST})
        assert [kind for kind, _ in events] == [*TOOL_KINDS[:3], "error"]
        assert events[-1][1]["status"] == 502 and "HTTP 500" in events[-1][1]["error"]
        # The server goes on: a search needs no model.
        assert client.post("/api/search", json={"query": "backups"}).status_code == 200
