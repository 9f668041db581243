"""``serve mcp`` on stdio answers the handshake from its cache while the MCP SDK loads.

A first start answers through the SDK and caches its answers; a second answers
``initialize`` and ``tools/list`` with them before the SDK is imported (the debug log
says so), and everything after goes to the SDK as before. When the tools changed since
the cache was written, the client is told to list them again and the cache is corrected.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any, Self

import pytest

from tests.helpers import WAIT_S, cli_env, spawned
from tests.mcp_stdio_helpers import call, make_corpus, serve

pytestmark = pytest.mark.anyio

VERSION = "2025-06-18"
EARLY = "from the cached handshake"


class RawClient:
    """JSON-RPC lines over a ``knowhub --debug serve mcp`` process's stdin/stdout, for a
    ``with`` block (at its end the process is ended and its pipes closed, come what may)."""

    def __init__(self, root: Path) -> None:
        command = [
            sys.executable,
            "-m",
            "knowhub",
            "--debug",
            "--data-dir",
            str(root / "data"),
            "serve",
            "mcp",
            "--docs",
            str(root / "docs"),
        ]
        self._stack = ExitStack()
        self.log = self._stack.enter_context((root / "raw.log").open("w", encoding="utf-8"))
        self.process: subprocess.Popen[bytes] = self._stack.enter_context(
            spawned(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                env=cli_env(),
                cwd=root,
            )
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def send(self, message: dict[str, Any]) -> None:
        stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        stdin.write((json.dumps(message) + "\n").encode())
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        stdout: IO[bytes] = self.process.stdout  # type: ignore[assignment]
        line = stdout.readline()
        assert line, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    def handshake(self) -> tuple[dict[str, Any], dict[str, Any]]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        init = self.receive()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        return init, self.receive()

    def call(self, id_: int, tool: str) -> dict[str, Any]:
        """A tools/call's answer; notifications before it are skipped and kept."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": id_,
                "method": "tools/call",
                "params": {"name": tool, "arguments": {}},
            }
        )
        self.notes: list[dict[str, Any]] = []
        while True:
            message = self.receive()
            if message.get("id") == id_:
                return message
            self.notes.append(message)

    def close(self, root: Path) -> str:
        stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        stdin.close()
        stdout: IO[bytes] = self.process.stdout  # type: ignore[assignment]
        rest = stdout.read()
        stdout.close()
        self.process.wait(timeout=WAIT_S)
        self.log.close()
        assert rest == b"", rest  # nothing after the last answer: no dropped frame leaked
        return (root / "raw.log").read_text(encoding="utf-8")


def _cache(root: Path) -> Path:
    (found,) = (root / "data" / "cache").glob("mcp-handshake-*.json")
    return found


async def test_a_second_start_answers_the_handshake_as_the_sdk_did(tmp_path: Path) -> None:
    root = make_corpus(tmp_path)
    with RawClient(root) as first:
        sdk_init, sdk_tools = first.handshake()
        assert "result" in first.call(3, "list_collections")
        assert EARLY not in first.close(root)  # nothing cached yet: the SDK answered
    assert sdk_init["result"]["capabilities"]["tools"]["listChanged"] is True

    with RawClient(root) as second:
        init, tools = second.handshake()
        answered = second.call(3, "list_collections")
        log = second.close(root)
    assert log.count(EARLY) == 2, log[-3000:]
    assert (init, tools) == (sdk_init, sdk_tools)
    assert "collections" in answered["result"]["structuredContent"]
    assert second.notes == []  # the tools were the same: no list_changed

    async with serve(root) as client:  # the official client, through the cached path
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == {t["name"] for t in sdk_tools["result"]["tools"]}
        assert "collections" in await call(client, "list_collections")


async def test_a_stale_cache_is_corrected_and_the_client_told(tmp_path: Path) -> None:
    root = make_corpus(tmp_path)
    with RawClient(root) as first:
        _, sdk_tools = first.handshake()
        first.close(root)
    cached = json.loads(_cache(root).read_text(encoding="utf-8"))
    cached["tools"][VERSION]["tools"] = cached["tools"][VERSION]["tools"][:1]  # a tool since
    _cache(root).write_text(json.dumps(cached), encoding="utf-8")

    with RawClient(root) as stale:
        _, tools = stale.handshake()
        assert len(tools["result"]["tools"]) == 1  # what the cache said, answered early
        stale.call(3, "list_collections")
        assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in stale.notes
        stale.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        again = stale.receive()
        stale.close(root)
    assert again["result"] == sdk_tools["result"]
    assert (
        json.loads(_cache(root).read_text(encoding="utf-8"))["tools"][VERSION]
        == sdk_tools["result"]
    )
