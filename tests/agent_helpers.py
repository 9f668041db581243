"""Helpers for the agent's tests: the pinned npm filesystem server, and finding marked processes.

The filesystem server (``@modelcontextprotocol/server-filesystem``, pinned in the Makefile) is
installed by ``make test`` into .cache/mcp-servers; KNOWHUB_MCP_FILESYSTEM points at another
``mcp-server-filesystem`` executable instead. It is never assumed: without it the tests fail
and say how to install it.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from tests.helpers import ROOT

FILESYSTEM_ENV = "KNOWHUB_MCP_FILESYSTEM"
SERVERS_DIR = ROOT / ".cache" / "mcp-servers"
SLOW_SERVER = ROOT / "tests" / "mcp_slow_server.py"
MARK = "KNOWHUB_TEST_MARK"


def filesystem_server_bin() -> Path:
    """The ``mcp-server-filesystem`` executable (fails the test, saying how to get it)."""
    override = os.environ.get(FILESYSTEM_ENV)
    path = (
        Path(override)
        if override
        else SERVERS_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"
    )
    if not path.is_file():
        pytest.fail(
            f"MCP filesystem server not found at {path}: run `make test`, which installs "
            "@modelcontextprotocol/server-filesystem into .cache/mcp-servers "
            f"(or set {FILESYSTEM_ENV} to an mcp-server-filesystem executable)",
            pytrace=False,
        )
    return path


def filesystem_npx_cwd() -> Path:
    """A working directory where ``npx -y @modelcontextprotocol/server-filesystem`` runs the
    pinned local install, without the network (npx resolves packages from the cwd's
    node_modules first)."""
    filesystem_server_bin()
    return SERVERS_DIR


def slow_server(marker: str) -> dict[str, object]:
    """An ``mcpServers`` entry for tests/mcp_slow_server.py, its processes marked ``marker``."""
    return {"command": sys.executable, "args": [str(SLOW_SERVER)], "env": {MARK: marker}}


def new_marker() -> str:
    return f"mark-{uuid.uuid4().hex}"


def processes_marked(marker: str) -> list[int]:
    """Pids of live processes whose environment has ``KNOWHUB_TEST_MARK=marker``."""
    needle = f"{MARK}={marker}".encode()
    found: list[int] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(proc.name))
    return found
