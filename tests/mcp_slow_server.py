"""A small stdio MCP server for the pool's tests: slow, failing, crashing and big tools.

Run as ``python tests/mcp_slow_server.py``; each tool exists to make one failure real.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("slow")


@server.tool()
def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


def _started(touch: str) -> None:
    """Create ``touch`` (when given): how a test knows the call has reached the server."""
    if touch:
        Path(touch).touch()


@server.tool()
def sleep(seconds: float, touch: str = "") -> str:
    """Block for ``seconds`` (a thread sleep, so a cancelled call leaves the server busy)."""
    _started(touch)
    time.sleep(seconds)
    return f"slept {seconds}"


_meeting = threading.Condition()
_arrived = 0


@server.tool()
def meet(n: int, within: float) -> str:
    """Return once ``n`` calls of meet are in this server at the same time (each in a thread
    of its own): a client that sent them one after another gets an error after ``within``
    seconds instead."""
    global _arrived
    with _meeting:
        _arrived += 1
        _meeting.notify_all()
        if not _meeting.wait_for(lambda: _arrived >= n, timeout=within):
            raise ToolError(f"only {_arrived} of {n} calls arrived within {within} s")
    return f"met {n}"


@server.tool()
async def block(seconds: float, touch: str = "") -> str:
    """Block the event loop and ignore SIGTERM: deaf to stdin's EOF, only SIGKILL ends it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _started(touch)
    time.sleep(seconds)
    return f"blocked {seconds}"


@server.tool()
def fail(message: str) -> str:
    """Raise, so the result comes back with isError and ``message``."""
    raise ToolError(message)


@server.tool()
def big(n: int) -> str:
    """``n`` characters of text, to carry a large result over the pipe."""
    return "x" * n


@server.tool()
def crash(code: int = 3) -> str:
    """Exit the process in the middle of the call, as a segfault or OOM kill would."""
    os._exit(code)


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe() -> str:
    """Pretend to delete everything (marked destructive)."""
    return "wiped"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=True))
def confused() -> str:
    """Claims both destructive and read-only: read-only wins."""
    return "fine"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``grown`` and tell the client its tool list changed."""
    server.add_tool(lambda: "grown", name="grown", description="Added by grow.")
    await ctx.notify_tools_changed()
    return "grew"


if __name__ == "__main__":
    server.run("stdio")
