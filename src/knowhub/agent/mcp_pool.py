"""External MCP servers behind a synchronous, thread-safe pool: start, list tools, call, close.

The official SDK client is async and each server's ``async with Client(...)`` must be entered
and exited by one task. So the pool runs one event loop in a background thread; every server
launch is a long-lived task there (enter, list tools, signal ready, wait for stop, exit), and
the caller's threads reach it through an anyio :class:`~anyio.from_thread.BlockingPortal`.

Stdio servers are started through :mod:`knowhub.agent.guard`, which kills the server's
process group if knowhub dies without closing the pool. Nothing a server does raises out of
:meth:`McpPool.call`: timeouts, crashes and protocol errors come back as an error outcome
the model can read, and a server found dead is started again on the next start() or call().
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import IO, TYPE_CHECKING, Any, TextIO, TypeVar, cast

import anyio
import httpx2
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal
from mcp import Client, MCPError
from mcp.client import Transport
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    Implementation,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    ToolListChangedNotification,
)
from pydantic import ValidationError

from knowhub.agent import guard
from knowhub.agent.mcp_config import ServerConfig

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams  # what a Transport yields

__all__ = ["McpPool", "RemoteTool", "ToolOutcome", "remote_tool", "tool_outcome"]

_T = TypeVar("_T")
_PAGE_CAP = 100  # tools/list pages: a paginator that never ends cannot hang start()
_STDERR_TAIL = 2000  # characters of a stdio server's stderr quoted in an error
# The SDK's stdio close: 0.5 s flush, stdin closed, 2 s grace, SIGTERM, 2 s, SIGKILL, 2 s to
# see the kill: 6.5 s at worst, and a little over that.
_CLOSE_S = 7.0
_HTTP_BODY = 300  # characters of an HTTP error body quoted
# What the SDK's streamable HTTP client answers once the server forgot our session (it
# restarted): the connection is as good as closed.
_SESSION_GONE = "Session terminated"
# The SDK's own HTTP client timeouts: 30 s to connect or write, 300 s to read (an SSE stream
# may stay quiet that long).
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@dataclass(frozen=True)
class RemoteTool:
    """One tool an external server lists, with the hints that decide whether it is offered."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    destructive: bool


@dataclass(frozen=True)
class ToolOutcome:
    """What a call returned, as text for the model; ``is_error`` for failures of any kind."""

    text: str
    is_error: bool = False


def remote_tool(server: str, tool: Tool) -> RemoteTool:
    """The pool's view of a listed tool.

    A tool is destructive only when it says so (destructiveHint true, readOnlyHint not true).
    The spec's defaults would make every un-annotated tool destructive, and most servers
    annotate nothing: refusing them all would make the ``allowDestructive`` list the real
    allow list. Un-annotated tools are governed by ``allow``/``deny`` instead.
    """
    hints = tool.annotations
    read_only = hints is not None and hints.read_only_hint is True
    destructive = hints is not None and hints.destructive_hint is True and not read_only
    return RemoteTool(
        server=server,
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        read_only=read_only,
        destructive=destructive,
    )


def tool_outcome(result: CallToolResult) -> ToolOutcome:
    """Text of a tool result; non-text content is noted, structured content used when no text."""
    parts = [_block_text(block) for block in result.content]
    has_text = any(_is_text(block) for block in result.content)
    if not has_text and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return ToolOutcome("\n".join(p for p in parts if p), result.is_error)


def _is_text(block: ContentBlock) -> bool:
    if isinstance(block, EmbeddedResource):
        return isinstance(block.resource, TextResourceContents)
    return isinstance(block, TextContent)


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.type}: {block.mime_type}, {_b64_size(block.data)} bytes]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.uri} ({block.name})]"
    resource = block.resource
    if isinstance(resource, TextResourceContents):
        return resource.text
    mime = resource.mime_type or "application/octet-stream"
    return f"[resource: {resource.uri}, {mime}, {_b64_size(resource.blob)} bytes]"


def _b64_size(data: str) -> int:
    return len(data.rstrip("=")) * 3 // 4


def _describe(error: BaseException) -> str:
    """One line for an exception, the leaves of an exception group joined."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in error.exceptions)
    if isinstance(error, MCPError):
        return error.message
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class _Connection:
    """One launch of a server: its client, tool listing, and the events of its lifetime task."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.tools: list[RemoteTool] = []
        self.error = ""
        self.stale = False  # the server sent tools/list_changed
        self.gone = False  # a stdio server's stdout ended: it exited or crashed
        self.http_error = ""  # the last HTTP error status: the SDK reports only that one came
        self.ready = anyio.Event()
        self.stop = anyio.Event()
        self.done = anyio.Event()

    @property
    def up(self) -> bool:
        return self.client is not None and not self.stop.is_set() and not self.gone

    async def on_message(self, message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.stale = True

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            body = (await response.aread()).decode("utf-8", "replace").strip()
            self.http_error = f"HTTP {response.status_code} {response.reason_phrase}: {body}"

    def explain(self, error: BaseException) -> str:
        """The error, and what the HTTP server said if it answered with an error status."""
        said = f" ({self.http_error[:_HTTP_BODY]})" if self.http_error else ""
        self.http_error = ""
        return _describe(error) + said


async def _watch_tools(conn: _Connection, client: Client) -> None:
    """Mark the listing stale when the tools change.

    Servers on protocol 2026-07-28 tell only a ``subscriptions/listen`` stream; older ones
    send ``notifications/tools/list_changed``, which :meth:`_Connection.on_message` sees.
    """
    try:
        async with client.listen(tools_list_changed=True) as events:
            async for _ in events:
                conn.stale = True
    except Exception:  # an older protocol, or a server that cannot listen: nothing to watch
        return


@asynccontextmanager
async def _noting_eof(transport: Transport, conn: _Connection) -> AsyncIterator[TransportStreams]:
    """``transport``, with ``conn.gone`` set when the server's output ends.

    A stdio server that dies between calls would otherwise look up until the next call
    failed; relaying its messages shows the end at once, so start() and call() relaunch it.
    (Stdio only: its streams carry no per-message context a relay could lose.)
    """
    async with transport as (read, write), anyio.create_task_group() as relay:
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                async with send:
                    async for item in read:
                        await send.send(item)
                conn.gone = True

        relay.start_soon(pump)
        try:
            yield receive, write
        finally:
            relay.cancel_scope.cancel()


class _Server:
    """A configured server inside the loop: (re)launched on demand, one launch at a time."""

    def __init__(self, config: ServerConfig, tasks: TaskGroup, pool: McpPool) -> None:
        self.config = config
        self._tasks = tasks
        self._pool = pool
        self._lock = anyio.Lock()
        self._conn: _Connection | None = None
        self._errlog: IO[str] | None = None
        self._failure = ""  # why the last start failed, answered until _retry_at
        self._retry_at = 0.0

    async def ensure(self) -> list[RemoteTool] | str:
        """The server's tools, launching it first if it is not up; else why it is not."""
        async with self._lock:
            conn = self._conn
            if conn is None or not conn.up:
                if self._failure and anyio.current_time() < self._retry_at:
                    return self._failure
                if conn is not None:
                    conn.stop.set()  # a server found dead: its lifetime task winds down
                    with anyio.move_on_after(_CLOSE_S):  # never two of it at once
                        await conn.done.wait()
                conn = self._conn = _Connection()
                self._tasks.start_soon(self._live, conn)
                await conn.ready.wait()
                if not conn.up:
                    at = f" at {self.config.url}" if self.config.url else ""
                    self._failure = (
                        f"MCP server {self.config.name!r}{at} did not start: {conn.error}"
                    )
                    self._retry_at = anyio.current_time() + self._pool.retry_s
                    return self._failure
                self._failure = ""
            if conn.stale:
                await self._relist(conn)
            return list(conn.tools)

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        where = f"tool {tool!r} of MCP server {self.config.name!r}"
        up = await self.ensure()
        conn = self._conn
        client = conn.client if conn is not None else None
        if isinstance(up, str) or conn is None or client is None:
            return ToolOutcome(f"{where} is unavailable: {up}", True)
        timeout = self._pool.call_timeout_s
        try:
            with anyio.fail_after(timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            text = f"{where}: no answer within {timeout:g} s; the call was cancelled"
            return ToolOutcome(text, True)
        except ValidationError as e:  # the server answered, but not in the protocol's shape
            return ToolOutcome(f"{where}: invalid result ({e.error_count()} problems): {e}", True)
        except MCPError as e:
            if e.code != CONNECTION_CLOSED and e.message != _SESSION_GONE:
                return ToolOutcome(f"{where} failed: {conn.explain(e)} (MCP error {e.code})", True)
            return self._lost(conn, where, e)
        except Exception as e:  # a broken pipe or HTTP failure: the connection is gone
            return self._lost(conn, where, e)
        outcome = tool_outcome(result)
        if outcome.is_error:
            return ToolOutcome(f"{where} returned an error: {outcome.text}", True)
        return outcome

    def _lost(self, conn: _Connection, where: str, error: BaseException) -> ToolOutcome:
        """The connection broke mid-call: stop it, so the next call or start() launches anew."""
        conn.stop.set()
        tail = self._stderr_tail()
        detail = f"; its stderr ends:\n{tail}" if tail else ""
        text = (
            f"{where} failed: the server went away ({conn.explain(error)}); "
            f"it is restarted on the next call{detail}"
        )
        return ToolOutcome(text, True)

    async def _relist(self, conn: _Connection) -> None:
        conn.stale = False
        if conn.client is None:
            return
        try:
            with anyio.fail_after(self._pool.call_timeout_s):
                conn.tools = await self._list(conn.client)
        except Exception:  # keep the old listing: a failed refresh is no reason to lose the server
            conn.stale = True

    async def _live(self, conn: _Connection) -> None:
        """Enter the client, list its tools, wait for stop, exit: all in this one task."""
        try:
            deadline = anyio.current_time() + self._pool.start_timeout_s
            with anyio.CancelScope(deadline=deadline) as scope:
                async with self._open(conn) as client, anyio.create_task_group() as watch:
                    conn.tools = await self._list(client)
                    watch.start_soon(_watch_tools, conn, client)
                    conn.client = client
                    scope.deadline = math.inf
                    conn.ready.set()
                    await conn.stop.wait()
                    watch.cancel_scope.cancel()
            if not conn.ready.is_set():
                conn.error = f"no answer within {self._pool.start_timeout_s:g} s"
        except Exception as e:
            conn.error = conn.explain(e)
        finally:
            conn.client = None
            conn.stop.set()
            if not conn.ready.is_set() and (tail := self._stderr_tail()):
                conn.error += f"; its stderr ends:\n{tail}"
            conn.ready.set()
            conn.done.set()

    @asynccontextmanager
    async def _open(self, conn: _Connection) -> AsyncIterator[Client]:
        c = self.config
        options: dict[str, Any] = {
            "client_info": Implementation(name="knowhub", version=version("knowhub")),
            "message_handler": conn.on_message,
            "cache": None,  # the pool keeps the listing itself
        }
        if c.url is not None:
            async with httpx2.AsyncClient(headers=dict(c.headers), timeout=_HTTP_TIMEOUT) as http:
                http.event_hooks["response"].append(conn.on_response)
                transport = streamable_http_client(c.url, http_client=http)
                async with Client(transport, **options) as client:
                    yield client
            return
        assert c.command is not None  # parse_mcp_config gives one of command or url
        # -I: the guard ignores PYTHONPATH and friends, and needs no installed knowhub.
        params = StdioServerParameters(
            command=sys.executable,
            args=["-I", guard.__file__, "--parent", str(os.getpid()), "--", c.command, *c.args],
            env=dict(c.env),
            cwd=c.cwd,
        )
        transport = _noting_eof(stdio_client(params, errlog=self._new_errlog()), conn)
        async with Client(transport, **options) as client:
            yield client

    async def _list(self, client: Client) -> list[RemoteTool]:
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return [remote_tool(self.config.name, t) for t in tools]

    def _new_errlog(self) -> TextIO:
        """A fresh file for the server's stderr (the last launch's is quoted in errors)."""
        self.close_errlog()
        # Closed by the next launch or by stop(), not by a with: it outlives this call.
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        return cast(TextIO, self._errlog)

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        fd = self._errlog.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - 4 * _STDERR_TAIL)
        text = os.pread(fd, size - start, start).decode("utf-8", "replace")
        return text[-_STDERR_TAIL:].strip()

    async def stop(self) -> None:
        if self._conn is not None:
            self._conn.stop.set()
            await self._conn.done.wait()
        self.close_errlog()

    def close_errlog(self) -> None:
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None


class _Loop:
    """The background thread: an event loop, a portal into it, and a task group for servers."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self.portal: BlockingPortal | None = None
        self.tasks: TaskGroup | None = None
        # Daemon: a pool never closed must not keep the interpreter from exiting (the
        # guard still stops the servers once this process is gone).
        self._thread = threading.Thread(
            target=anyio.run, args=(self._main,), name="knowhub-mcp", daemon=True
        )
        self._thread.start()
        self._ready.wait()

    async def _main(self) -> None:
        async with BlockingPortal() as portal, anyio.create_task_group() as tasks:
            self.portal, self.tasks = portal, tasks
            self._ready.set()
            await portal.sleep_until_stopped()
            tasks.cancel_scope.cancel()

    def call(self, func: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run ``func`` in the loop and wait; if the wait is interrupted, cancel it there too."""
        assert self.portal is not None
        future: Future[_T] = self.portal.start_task_soon(func, *args)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt while waiting: the call stops as well
            raise

    def stop(self, shutdown: Callable[[], Awaitable[None]]) -> None:
        assert self.portal is not None
        try:
            self.call(shutdown)
            self.portal.call(self.portal.stop, True)
        finally:
            self._thread.join(_CLOSE_S)


class McpPool:
    """The external MCP servers of one knowhub process; safe to share between threads.

    Args:
        servers: the parsed ``mcpServers`` (disabled ones are left out).
        call_timeout_s: how long one tool call may take before it is cancelled.
        start_timeout_s: how long a server may take to start and list its tools.
        retry_s: how long a server that failed to start is left alone before another try.
    """

    def __init__(
        self,
        servers: Mapping[str, ServerConfig],
        *,
        call_timeout_s: float = 60.0,
        start_timeout_s: float = 60.0,
        retry_s: float = 30.0,
    ) -> None:
        self._configs = {name: c for name, c in servers.items() if not c.disabled}
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.retry_s = retry_s
        self._lock = threading.Lock()
        self._loop: _Loop | None = None
        self._servers: dict[str, _Server] = {}
        self._closed = False

    @property
    def names(self) -> list[str]:
        """The enabled servers, in the file's order."""
        return list(self._configs)

    def start(self, names: Iterable[str] | None = None) -> dict[str, list[RemoteTool] | str]:
        """Start the servers ``names`` (default: all) not up yet, in parallel; each one's
        tools, or why it failed. A server that failed is tried again only ``retry_s`` later:
        one that hangs must not hold up every chat for its start timeout."""
        wanted = [n for n in (self._configs if names is None else names) if n in self._configs]
        loop = self._running()
        if loop is None:
            return {name: "the MCP pool is closed" for name in wanted}
        return loop.call(self._start_all, wanted)

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call ``tool`` on ``server``; every failure is an error outcome naming both."""
        if server not in self._configs:
            known = ", ".join(self._configs) or "none"
            return ToolOutcome(f"no MCP server named {server!r} (configured: {known})", True)
        loop = self._running()
        if loop is None:
            text = f"tool {tool!r} of MCP server {server!r}: the MCP pool is closed"
            return ToolOutcome(text, True)
        return loop.call(self._call, server, tool, arguments)

    def close(self) -> None:
        """Stop every server (in a few seconds); later calls answer that the pool is closed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop(self._stop_all)

    def __enter__(self) -> McpPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _running(self) -> _Loop | None:
        with self._lock:
            if self._closed:
                return None
            if self._loop is None:
                self._loop = _Loop()
            return self._loop

    def _server(self, name: str) -> _Server:
        if name not in self._servers:
            loop = self._loop
            assert loop is not None and loop.tasks is not None
            self._servers[name] = _Server(self._configs[name], loop.tasks, self)
        return self._servers[name]

    async def _start_all(self, names: list[str]) -> dict[str, list[RemoteTool] | str]:
        found: dict[str, list[RemoteTool] | str] = {}

        async def one(name: str) -> None:
            found[name] = await self._server(name).ensure()

        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(one, name)
        return {name: found[name] for name in names}

    async def _call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        return await self._server(server).call(tool, arguments)

    async def _stop_all(self) -> None:
        with anyio.move_on_after(_CLOSE_S):
            async with anyio.create_task_group() as tg:
                for server in self._servers.values():
                    tg.start_soon(server.stop)
