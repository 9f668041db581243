"""The MCP client pool against real servers: the npm filesystem server over stdio, ``knowhub
serve mcp`` over streamable HTTP, and tests/mcp_slow_server.py for the failures (timeouts,
crashes, kills). Every server process carries a unique marker in its environment, so each
test can check that nothing it started is left running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from knowhub.agent.mcp_config import ServerConfig, parse_mcp_config
from knowhub.agent.mcp_pool import McpPool, RemoteTool, tool_outcome
from tests.agent_helpers import (
    MARK,
    SLOW_SERVER,
    filesystem_npx_cwd,
    filesystem_server_bin,
    new_marker,
    processes_marked,
    slow_server,
)
from tests.helpers import NEVER_S, ROOT, WAIT_S, cli_env, sigint_default, spawned, write
from tests.mcp_helpers import HttpServer, http_server, wait_until

TOKEN = "pool-Vb7nM2qX9cLw4RtZ"
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps([{"name": "agent", "token_env": "KH_POOL_TOKEN"}]),
    "KNOWHUB_SERVER__AUTH_MAX_FAILURES": "1000",
    "KH_POOL_TOKEN": TOKEN,
}
FAQ = "# FAQ\n\n## Who approves a refund?\n\nA refund above 500 euros needs the finance lead.\n"


def servers(entries: dict[str, Any], **environ: str) -> dict[str, ServerConfig]:
    return parse_mcp_config({"mcpServers": entries}, "test.json", environ=environ)


@pytest.fixture
def marker() -> Iterator[str]:
    """A marker for this test's servers; the test fails if one is still alive at its end,
    and any still alive then are killed (a failed test must leave nothing behind)."""
    mark = new_marker()
    yield mark
    try:
        wait_until(lambda: not processes_marked(mark), interval=0.1)
    finally:
        for pid in processes_marked(mark):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    write(tmp_path / "allowed" / "notes.txt", "the orchid blooms in spring\n")
    write(tmp_path / "outside.txt", "not yours\n")
    return tmp_path


@pytest.fixture(scope="module")
def knowhub_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    root = tmp_path_factory.mktemp("pool-http")
    write(root / "docs" / "faq.md", FAQ)
    with http_server("--docs", "docs", cwd=root, data_dir=root / "data", env=TOKEN_ENV) as s:
        wait_until(lambda: s.get("/health", TOKEN).json().get("indexing") is False)
        yield s


def by_name(tools: list[RemoteTool] | str) -> dict[str, RemoteTool]:
    assert not isinstance(tools, str), tools
    return {t.name: t for t in tools}


# -- the npm filesystem server over stdio ----------------------------------------------


def test_filesystem_server_reads_allowed_files_and_refuses_the_rest(
    docs: Path, marker: str
) -> None:
    allowed = docs / "allowed"
    config = servers(
        {
            "fs": {
                "command": str(filesystem_server_bin()),
                "args": [str(allowed)],
                "env": {MARK: marker},
            }
        }
    )
    with McpPool(config) as pool:
        tools = by_name(pool.start()["fs"])
        assert processes_marked(marker)
        assert tools["read_text_file"].read_only and not tools["read_text_file"].destructive
        assert tools["write_file"].destructive and not tools["create_directory"].destructive
        fs = config["fs"]
        assert fs.refusal(tools["read_text_file"]) is None
        assert fs.refusal(tools["write_file"]) == (
            "destructive (destructiveHint); allow it with allowDestructive"
        )
        read = pool.call("fs", "read_text_file", {"path": str(allowed / "notes.txt")})
        assert read.text == "the orchid blooms in spring\n" and not read.is_error
        outside = pool.call("fs", "read_text_file", {"path": str(docs / "outside.txt")})
        assert outside.is_error
        assert "'read_text_file' of MCP server 'fs' returned an error" in outside.text
        assert "outside allowed directories" in outside.text


def test_readme_npx_config_runs_the_local_install_offline(docs: Path, marker: str) -> None:
    entry = {
        "command": "npx",
        "args": ["-y", "@modelcontextprotocol/server-filesystem", str(docs / "allowed")],
        "cwd": str(filesystem_npx_cwd()),
        "env": {"npm_config_offline": "true", MARK: marker},
    }
    with McpPool(servers({"fs": entry})) as pool:
        assert "list_allowed_directories" in by_name(pool.start()["fs"])
        listed = pool.call("fs", "list_directory", {"path": str(docs / "allowed")})
        assert "notes.txt" in listed.text, listed


# -- knowhub itself over streamable HTTP -----------------------------------------------


def test_knowhub_over_http_with_a_bearer_header_lists_and_searches(
    knowhub_http: HttpServer,
) -> None:
    entry = {"url": knowhub_http.url + "/mcp", "headers": {"Authorization": "Bearer ${KH_TOKEN}"}}
    with McpPool(servers({"kb": entry}, KH_TOKEN=TOKEN)) as pool:
        tools = by_name(pool.start()["kb"])
        assert {"search_docs", "query_knowledge_hub", "ask"} <= set(tools)
        found = pool.call("kb", "search_docs", {"query": "who approves a refund"})
        assert not found.is_error and "finance lead" in found.text


def test_a_wrong_token_is_the_servers_start_error_not_an_exception(
    knowhub_http: HttpServer,
) -> None:
    entry = {"url": knowhub_http.url + "/mcp", "headers": {"Authorization": "Bearer wrong-token"}}
    with McpPool(servers({"kb": entry}), start_timeout_s=WAIT_S) as pool:
        error = pool.start()["kb"]
        assert isinstance(error, str) and error.startswith(
            f"MCP server 'kb' at {entry['url']} did not start: "
        )
        assert "HTTP 401 Unauthorized" in error and "missing or invalid bearer token" in error
        outcome = pool.call("kb", "search_docs", {"query": "refund"})
        assert outcome.is_error and "'kb' at " in outcome.text


# -- failures, with the python slow server ---------------------------------------------


def test_a_missing_command_is_reported_and_tried_again_on_the_next_start(
    tmp_path: Path, marker: str
) -> None:
    script = tmp_path / "server.py"
    entry = {"command": sys.executable, "args": [str(script)], "env": {MARK: marker}}
    config = servers({"gone": {"command": "no-such-mcp-server-xyz"}, "later": entry})
    with McpPool(config, retry_s=0) as pool:
        first = pool.start()
        gone = first["gone"]
        assert isinstance(gone, str) and "command not found: no-such-mcp-server-xyz" in gone
        assert isinstance(first["later"], str) and "server.py" in first["later"]
        script.write_text(SLOW_SERVER.read_text(encoding="utf-8"), encoding="utf-8")
        assert "echo" in by_name(pool.start()["later"])
        assert isinstance(pool.start()["gone"], str)


def test_a_server_that_failed_is_left_alone_for_retry_s(tmp_path: Path, marker: str) -> None:
    script = write(tmp_path / "server.py", f"import time; time.sleep({NEVER_S})\n")
    hangs = {"command": sys.executable, "args": [str(script)], "env": {MARK: marker}}
    config = servers({"hangs": hangs, "other": {"command": "nope"}})
    # 1.5 s is the setting under test (the server never answers); retry_s outlasts the test.
    with McpPool(config, start_timeout_s=1.5, retry_s=NEVER_S) as pool:
        first = pool.start(["hangs"])
        assert list(first) == ["hangs"]  # only what was asked for starts
        assert isinstance(first["hangs"], str) and "no answer within 1.5 s" in first["hangs"]
        script.write_text(SLOW_SERVER.read_text(encoding="utf-8"), encoding="utf-8")
        again = pool.start(["hangs"])  # launched again, it would start now: it is not
        assert again["hangs"] == first["hangs"]
        other = pool.start()["other"]  # the others start (or fail) as ever
        assert isinstance(other, str) and "command not found: nope" in other


def test_a_slow_call_times_out_as_an_error_and_the_server_keeps_serving(marker: str) -> None:
    with McpPool(servers({"slow": slow_server(marker)}), call_timeout_s=WAIT_S) as pool:
        pid = pool.call("slow", "pid", {}).text
        pool.call_timeout_s = 1.0  # the setting under test, for the call that never returns
        outcome = pool.call("slow", "sleep", {"seconds": NEVER_S})
        pool.call_timeout_s = WAIT_S
        assert outcome.is_error and outcome.text == (
            "tool 'sleep' of MCP server 'slow': no answer within 1 s; the call was cancelled"
        )
        assert pool.call("slow", "echo", {"text": "still here"}).text == "still here"
        assert pool.call("slow", "pid", {}).text == pid  # the same process


def test_a_server_crashing_mid_call_is_an_error_then_restarted(marker: str) -> None:
    with McpPool(servers({"slow": slow_server(marker)})) as pool:
        before = pool.call("slow", "pid", {}).text
        crashed = pool.call("slow", "crash", {"code": 3})
        assert crashed.is_error and "tool 'crash' of MCP server 'slow' failed" in crashed.text
        assert "restarted on the next call" in crashed.text
        after = pool.call("slow", "pid", {})
        assert not after.is_error and after.text != before
        assert "echo" in by_name(pool.start()["slow"])


def test_a_server_that_died_between_calls_is_restarted_by_the_next_one(marker: str) -> None:
    with McpPool(servers({"slow": slow_server(marker)})) as pool:
        first = int(pool.call("slow", "pid", {}).text)
        os.kill(first, signal.SIGKILL)  # its guard exits with it
        wait_until(lambda: not processes_marked(marker), interval=0.05)
        again = pool.call("slow", "pid", {})
        assert not again.is_error and int(again.text) != first
        os.kill(int(again.text), signal.SIGKILL)
        wait_until(lambda: not processes_marked(marker), interval=0.05)
        assert "echo" in by_name(pool.start()["slow"])
        assert int(pool.call("slow", "pid", {}).text) not in (first, int(again.text))


def test_error_results_name_the_tool_and_big_results_arrive_whole(marker: str) -> None:
    with McpPool(servers({"slow": slow_server(marker)})) as pool:
        tools = by_name(pool.start()["slow"])
        assert tools["wipe"].destructive and not tools["confused"].destructive
        assert tools["confused"].read_only and not tools["echo"].destructive
        failed = pool.call("slow", "fail", {"message": "disk on fire"})
        assert failed.is_error
        assert failed.text == (
            "tool 'fail' of MCP server 'slow' returned an error: "
            "Error executing tool fail: disk on fire"
        )
        assert pool.call("slow", "big", {"n": 2_000_000}).text == "x" * 2_000_000
        unknown = pool.call("nowhere", "echo", {})
        assert (
            unknown.is_error and "no MCP server named 'nowhere' (configured: slow)" in unknown.text
        )


def test_a_changed_tool_list_is_listed_again_on_the_next_start(marker: str) -> None:
    with McpPool(servers({"slow": slow_server(marker)})) as pool:
        assert "grown" not in by_name(pool.start()["slow"])
        assert pool.call("slow", "grow", {}).text == "grew"
        wait_until(lambda: "grown" in by_name(pool.start()["slow"]), interval=0.05)
        assert pool.call("slow", "grown", {}).text == "grown"


def test_calls_from_many_threads_run_concurrently(marker: str) -> None:
    results: list[str] = []
    with McpPool(servers({"slow": slow_server(marker)}), call_timeout_s=WAIT_S) as pool:
        pool.start()

        def work() -> None:  # each call returns only once all six are in the server at once
            results.append(pool.call("slow", "meet", {"n": 6, "within": WAIT_S}).text)

        threads = [threading.Thread(target=work) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == ["met 6"] * 6


def test_close_stops_every_process_and_later_calls_are_refused(marker: str) -> None:
    pool = McpPool(servers({"a": slow_server(marker), "b": slow_server(marker)}))
    assert pool.names == ["a", "b"] and not processes_marked(marker)  # nothing before start
    assert set(pool.start()) == {"a", "b"}
    assert len(processes_marked(marker)) >= 4  # a guard and a server each
    pool.close()
    assert not processes_marked(marker)
    pool.close()
    assert pool.call("a", "echo", {"text": "x"}).text.endswith("the MCP pool is closed")


def test_disabled_servers_are_left_out() -> None:
    pool = McpPool(servers({"off": {"command": "nothing", "disabled": True}}))
    assert pool.names == [] and pool.start() == {}
    pool.close()


# -- knowhub interrupted or killed: a driver process holds the pool ---------------------

DRIVER = """
import json, sys
from knowhub.agent.mcp_config import parse_mcp_config
from knowhub.agent.mcp_pool import McpPool
never = float(sys.argv[4])
pool = McpPool(parse_mcp_config(json.loads(sys.argv[1]), "driver"), call_timeout_s=never)
try:
    print(sorted(t.name for t in pool.start()["slow"]), flush=True)
    pool.call("slow", sys.argv[2], {"seconds": never, "touch": sys.argv[3]})
finally:
    pool.close()
    print("closed", flush=True)
"""


@contextmanager
def driving(marker: str, tool: str, tmp: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding a pool, in a call of ``tool`` that never returns by itself (it
    lasts NEVER_S, longer than any wait), for the block; ended however the block ends."""
    started = tmp / "call-started"
    config = json.dumps({"mcpServers": {"slow": slow_server(marker)}})
    with spawned(
        [sys.executable, "-c", DRIVER, config, tool, str(started), str(NEVER_S)],
        cwd=ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=sigint_default,
    ) as driver:
        assert driver.stdout is not None
        assert "sleep" in driver.stdout.readline()
        wait_until(started.exists, interval=0.05)
        yield driver


def test_ctrl_c_in_a_long_call_stops_the_servers_promptly(marker: str, tmp_path: Path) -> None:
    with driving(marker, "sleep", tmp_path) as driver:
        driver.send_signal(signal.SIGINT)
        out, err = driver.communicate(timeout=WAIT_S)  # the call itself would outlast this
    assert "closed" in out and "KeyboardInterrupt" in err
    assert not processes_marked(marker)  # stopped before knowhub exited


def test_kill_9_of_knowhub_leaves_no_server_behind(marker: str, tmp_path: Path) -> None:
    with driving(marker, "block", tmp_path) as driver:  # a server deaf to EOF and SIGTERM
        driver.kill()
        driver.communicate()
    wait_until(lambda: not processes_marked(marker), interval=0.05)  # it would outlast this


def test_guard_reports_a_missing_command_and_passes_the_exit_status_on() -> None:
    guard = [sys.executable, "-m", "knowhub.agent.guard", "--"]
    missing = subprocess.run(
        [*guard, "no-such-cmd-xyz"], capture_output=True, text=True, env=cli_env()
    )
    assert missing.returncode == 127 and "command not found: no-such-cmd-xyz" in missing.stderr
    code = "import sys; print(sys.stdin.read().upper()); sys.exit(7)"
    done = subprocess.run(
        [*guard, sys.executable, "-c", code], input="eof reached", capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (7, "EOF REACHED\n")


def test_guard_takes_what_the_server_left_behind_with_it(marker: str) -> None:
    """A wrapper that exits leaving a child running (``sh -c "… &"``): the guard, whose
    group they share, ends it as well."""
    wrapper = ["sh", "-c", f"sleep {NEVER_S:.0f} & exit 3"]
    guard = [sys.executable, "-m", "knowhub.agent.guard", "--parent", str(os.getpid()), "--"]
    done = subprocess.run([*guard, *wrapper], env=cli_env({MARK: marker}), timeout=WAIT_S)
    assert done.returncode == 3
    wait_until(lambda: not processes_marked(marker), interval=0.05)


# -- results turned into text ----------------------------------------------------------


def test_tool_results_become_text_with_other_content_noted() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            ImageContent(data="aGVsbG8=", mime_type="image/png"),
            ResourceLink(uri="file:///a.txt", name="a.txt"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///b.txt", text="embedded")),
        ],
        structured_content={"ignored": True},
    )
    assert tool_outcome(result).text == (
        "first\n[image: image/png, 5 bytes]\n[resource link: file:///a.txt (a.txt)]\nembedded"
    )
    structured = CallToolResult(content=[], structured_content={"n": 1, "é": "ü"})
    assert tool_outcome(structured).text == '{"n": 1, "é": "ü"}'
