"""`knowhub chat` as a user runs it: the scripted OpenAI-compatible model over real HTTP,
the pinned npm filesystem server over stdio, knowhub's own search in-process, and a
``knowhub serve mcp --transport http`` as an external HTTP server."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from knowhub.testing.llm_server import LlmServer, Reply, ToolReply, serve
from tests.agent_helpers import (
    MARK,
    filesystem_npx_cwd,
    filesystem_server_bin,
    new_marker,
    processes_marked,
)
from tests.helpers import NEVER_S, ROOT, WAIT_S, cli_env, knowhub, sigint_default, spawned, write
from tests.mcp_helpers import http_server, wait_until

RUNBOOK = (
    "# Runbook\n\n## Disk full\n\nWhen a volume is full, free space on it before restarting "
    "the database: rotate the logs first.\n\n## Backups\n\nBackups run every 6 hours.\n"
)
QUESTION = "Read the incident log and tell me what our runbook says about it"


@dataclass
class Kb:
    root: Path
    log: Path
    incident: str  # what only reading the log can tell
    mcp: Path
    marker: str


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Kb:
    root = tmp_path_factory.mktemp("chat")
    write(root / "docs/runbook.md", RUNBOOK)
    ingested = knowhub("ingest", "docs", "--collection", "handbook", cwd=root)
    assert ingested.returncode == 0, ingested.stderr
    incident = f"INC-{uuid.uuid4().hex[:8]}"
    log = write(root / "ops/incident.log", f"03:12 {incident} db01: disk full on /var\n")
    marker = new_marker()
    servers = {
        "files": {
            "command": str(filesystem_server_bin()),
            "args": [str(root / "ops")],
            "env": {MARK: marker},
        }
    }
    mcp = write(root / "mcp.json", json.dumps({"mcpServers": servers}))
    return Kb(root, log, incident, mcp, marker)


def reads_then_answers(kb: Kb) -> Any:
    """Turn 1: read the log and search the runbook, in one turn; turn 2: answer from both."""

    def script(body: dict[str, Any]) -> Reply:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return [
                ToolReply("files__read_text_file", {"path": str(kb.log)}),
                ToolReply("knowhub__search", {"query": "disk full", "top_k": 2}),
            ]
        found = re.search(r"INC-\w+", results[0])
        cited = "[1]" if "[1] Runbook" in results[1] else "(no source)"
        incident = found.group(0) if found else "nothing"
        return f"The log reports {incident}: free the volume first {cited}."

    return script


def llm_env(llm: LlmServer, **extra: str) -> dict[str, str]:
    return {
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__BASE_URL": llm.openai_base,
        "KNOWHUB_LLM__MODEL": "gpt-4o-mini",
        **extra,
    }


def chat(kb: Kb, llm: LlmServer, *args: str, config: Path | None = None) -> Any:
    result = knowhub(
        "chat",
        *args,
        "--mcp-config",
        str(config or kb.mcp),
        "-c",
        "handbook",
        cwd=kb.root,
        env=llm_env(llm),
    )
    assert result.returncode == 0, result.stderr
    return result


def test_the_answer_holds_what_only_a_tool_could_read_and_cites_the_runbook(kb: Kb) -> None:
    with serve(script=reads_then_answers(kb)) as llm:
        out = json.loads(chat(kb, llm, QUESTION, "--json").stdout)
    assert kb.incident in out["answer"] and "[1]" in out["answer"]
    assert [(s["server"], s["tool"]) for s in out["steps"]] == [
        ("files", "read_text_file"),
        ("knowhub", "search"),
    ]
    read = out["steps"][0]
    assert read["arguments"] == {"path": str(kb.log)} and read["error"] is None
    assert read["result_chars"] > len(kb.incident) and read["ms"] >= 0
    assert [(c["n"], c["source"]) for c in out["citations"]] == [(1, "runbook.md")]
    assert out["citations"][0]["section_path"] == "Runbook > Disk full"
    assert out["stopped"] == "answer" and out["model_calls"] == 2
    # The model was offered both servers' tools, namespaced, with the schemas as given.
    offered = {t["function"]["name"]: t["function"] for t in llm.requests[0].body["tools"]}
    assert {"knowhub__search", "files__read_text_file"} <= set(offered)
    assert "files__write_file" not in offered  # destructiveHint: refused unless allowed
    assert offered["files__read_text_file"]["parameters"]["properties"]["path"]["type"] == "string"
    shown = knowhub("traces", "show", out["trace_id"], cwd=kb.root)
    assert shown.returncode == 0, shown.stderr
    assert "chat via cli" in shown.stdout and "1.files/read_text_file" in shown.stdout
    assert "step 1 files/read_text_file" in shown.stdout and "1.knowhub/search" in shown.stdout


def test_streamed_the_answer_comes_as_it_is_written_and_the_tools_on_stderr(kb: Kb) -> None:
    with serve(script=reads_then_answers(kb)) as llm:
        plain = chat(kb, llm, QUESTION, "--stream")
        lines = chat(kb, llm, QUESTION, "--stream", "--json").stdout.splitlines()
    assert kb.incident in plain.stdout and "Sources:\n  [1] runbook.md" in plain.stdout
    assert "· files/read_text_file" in plain.stderr and "✓" in plain.stderr
    assert llm.requests[0].stream
    events = [json.loads(line) for line in lines]
    kinds = [e["event"] for e in events]
    assert kinds[:4] == ["step", "tool_call", "tool_result", "tool_call"]
    assert "token" in kinds and kinds[-1] == "end"
    tokens = "".join(e["text"] for e in events if e["event"] == "token")
    assert tokens == events[-1]["answer"]


def test_a_conversation_keeps_its_history_and_its_servers(kb: Kb) -> None:
    def script(body: dict[str, Any]) -> Reply:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        return f"answer {len(users)} [1]"

    with serve(script=script) as llm:
        result = subprocess.run(
            [sys.executable, "-m", "knowhub", "chat", "--mcp-config", str(kb.mcp)],
            input="first question\nsecond question\n/exit\n",
            cwd=kb.root,
            env=cli_env(llm_env(llm)),
            capture_output=True,
            text=True,
            timeout=120,
        )
        second = llm.requests[1].body["messages"]
    assert result.returncode == 0, result.stderr
    assert "answer 1" in result.stdout and "answer 2" in result.stdout
    # The first answer's [1] was its own turn's source: the model gets it without the mark.
    assert [(m["role"], m["content"]) for m in second[1:]] == [
        ("user", "first question"),
        ("assistant", "answer 1"),
        ("user", "second question"),
    ]
    assert processes_marked(kb.marker) == []


def test_a_model_that_never_stops_is_stopped_and_made_to_answer(kb: Kb) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if body.get("tool_choice") == "none":
            return "What I have: the log exists."
        return [ToolReply("files__list_allowed_directories", {})]

    with serve(script=script) as llm:
        out = json.loads(chat(kb, llm, QUESTION, "--json", "--max-steps", "3").stdout)
        stuck = chat(kb, llm, QUESTION, "--stream", "--max-steps", "1")
    assert out["stopped"] == "max_steps" and out["model_calls"] == 4
    assert len(out["steps"]) == 3 and out["answer"] == "What I have: the log exists."
    # Streamed, the answer it was made to give is shown too.
    assert stuck.stdout.count("What I have: the log exists.") == 1


def test_mistakes_of_the_model_go_back_to_it_as_tool_errors(kb: Kb) -> None:
    def script(body: dict[str, Any]) -> Reply:
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return [
                ToolReply("files__read_text_file", '{"path": '),
                ToolReply("files__rm_rf", {}),
                ToolReply("files__read_text_file", {"path": "/etc/passwd"}),
            ]
        return "Errors: " + " | ".join(r[:40] for r in results)

    with serve(script=script) as llm:
        out = json.loads(chat(kb, llm, QUESTION, "--json").stdout)
    errors = [s["error"] for s in out["steps"]]
    assert "not valid JSON" in errors[0]
    assert "there is no tool 'files__rm_rf'" in errors[1]
    assert "outside allowed directories" in errors[2]
    assert out["answer"].count("Error:") == 3


def test_an_external_knowhub_over_http_is_one_more_server(kb: Kb, tmp_path: Path) -> None:
    write(tmp_path / "docs/faq.md", "# FAQ\n\n## Parking\n\nVisitors park on level 3.\n")
    data = tmp_path / "data"
    assert knowhub("--data-dir", str(data), "ingest", "docs", cwd=tmp_path).returncode == 0
    token = "t" + uuid.uuid4().hex
    # The server's tokens, in the knowhub.yaml of its working directory.
    tokens = "server:\n  tokens:\n    - {name: agent, token_env: KB_TOKEN}\n"
    write(tmp_path / "knowhub.yaml", tokens)
    env = {"KB_TOKEN": token}
    with http_server(cwd=tmp_path, data_dir=data, env=env) as kb2:
        servers = {
            "kb2": {"url": kb2.url + "/mcp", "headers": {"Authorization": "Bearer ${KB_TOKEN}"}}
        }
        config = write(tmp_path / "mcp.json", json.dumps({"mcpServers": servers}))

        def script(body: dict[str, Any]) -> Reply:
            results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
            if not results:
                return [ToolReply("kb2__search_docs", {"query": "where do visitors park"})]
            return "From kb2: " + results[0][:400]

        with serve(script=script) as llm:
            result = knowhub(
                "chat",
                QUESTION,
                "--json",
                "--mcp-config",
                str(config),
                cwd=kb.root,
                env={**llm_env(llm), "KB_TOKEN": token},
            )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["steps"][0]["server"] == "kb2" and out["steps"][0]["error"] is None
    assert "level 3" in out["answer"]
    assert token not in result.stdout  # the header's secret is nowhere in the output


def test_a_server_that_cannot_start_is_a_note_and_the_chat_goes_on(kb: Kb, tmp_path: Path) -> None:
    servers = {"gone": {"command": str(tmp_path / "no-such-server")}}
    config = write(tmp_path / "mcp.json", json.dumps({"mcpServers": servers}))
    with serve(script=lambda body: "fine") as llm:
        out = json.loads(chat(kb, llm, QUESTION, "--json", config=config).stdout)
    assert out["answer"] == "fine"
    assert any("MCP server 'gone' is not available" in note for note in out["notes"])


def test_no_model_or_a_bad_config_is_one_clear_line(kb: Kb, tmp_path: Path) -> None:
    no_model = knowhub("chat", QUESTION, cwd=kb.root)
    assert no_model.returncode == 1
    assert "knowhub chat needs a model that calls tools: set llm.provider" in no_model.stderr
    bad = write(tmp_path / "mcp.json", '{"mcpServers": {"fs": {"args": []}}}')
    with serve() as llm:
        result = knowhub("chat", QUESTION, "--mcp-config", str(bad), cwd=kb.root, env=llm_env(llm))
    assert result.returncode == 1 and "mcp.json" in result.stderr and "'fs'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture
def hung_chat(kb: Kb) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A chat whose model hangs after the filesystem server started and answered."""
    marker = new_marker()
    servers = {"files": {"command": str(filesystem_server_bin()), "args": [str(kb.root / "ops")]}}
    servers["files"]["env"] = {MARK: marker}  # type: ignore[index]
    config = write(kb.root / f"mcp-{marker}.json", json.dumps({"mcpServers": servers}))
    release = threading.Event()

    def script(body: dict[str, Any]) -> Reply:
        if any(m["role"] == "tool" for m in body["messages"]):
            release.wait(NEVER_S)  # the model "thinks" until the test is over
            return "late"
        return [ToolReply("files__list_allowed_directories", {})]

    command = [sys.executable, "-m", "knowhub", "chat", QUESTION, "--mcp-config", str(config)]
    with (
        serve(script=script) as llm,
        spawned(
            command,
            cwd=kb.root,
            env=cli_env(llm_env(llm)),
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=sigint_default,
        ) as process,
    ):
        try:
            wait_until(lambda: len(llm.requests) >= 2)
            assert processes_marked(marker), "the filesystem server should be running"
            yield process, marker
        finally:
            release.set()


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_stopping_the_chat_leaves_no_server_behind(
    hung_chat: tuple[subprocess.Popen[str], str], how: signal.Signals
) -> None:
    process, marker = hung_chat
    os.kill(process.pid, how)
    process.wait(WAIT_S)  # the model would answer only after the test
    wait_until(lambda: processes_marked(marker) == [])
    if how == signal.SIGINT:
        assert process.returncode != 0


README = (ROOT / "README.md").read_text(encoding="utf-8")
CHAT_SECTION = README.split("## Chat: an LLM that uses tools", 1)[1].split("\n## ", 1)[0]


def _block(language: str, n: int = 0) -> str:
    return re.findall(rf"```{language}\n(.*?)```", CHAT_SECTION, flags=re.DOTALL)[n]


@pytest.mark.parametrize("model", [0, 1], ids=["ollama", "openai"])
def test_the_readme_example_runs_as_written(kb: Kb, tmp_path: Path, model: int) -> None:
    """The README's mcp.json (npx and the filesystem server), its knowhub.yaml for each
    provider and its command: only the folder, the model's URL and the file's place change."""
    ops = str(kb.root / "ops")
    write(tmp_path / "mcp.json", _block("json").replace("/home/me/ops", ops))
    settings = yaml.safe_load(_block("yaml", model))
    key = "sk-" + uuid.uuid4().hex
    with serve(script=reads_then_answers(kb), api_key=key if model else None) as llm:
        settings["llm"]["base_url"] = llm.openai_base if model else llm.url
        settings["agent"]["mcp_config"] = str(tmp_path / "mcp.json")
        write(tmp_path / "knowhub.yaml", yaml.safe_dump(settings))
        command = shlex.split(_block("sh").strip().replace("/home/me/ops", ops))
        assert command[:2] == ["knowhub", "chat"]
        # From where npx finds the pinned install: the example runs without the network.
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "knowhub",
                "--config",
                str(tmp_path / "knowhub.yaml"),
                "--data-dir",
                str(kb.root / "data"),
                *command[1:],
            ],
            cwd=filesystem_npx_cwd(),
            env=cli_env({"OPENAI_API_KEY": key}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        protocols = {r.protocol for r in llm.requests}
    assert result.returncode == 0, result.stderr
    assert kb.incident in result.stdout and "[1] runbook.md" in result.stdout
    assert protocols == {"openai" if model else "ollama"}
