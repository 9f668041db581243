"""One simulated client: it sends a request to an endpoint and judges the answer.

Each client keeps its own WebSocket and MCP session (opened on first use, reopened after a
failure) and shares one HTTP connection pool with the others. Every request runs under the
per-request timeout; what it took, its first token (streams), its stage times and what was
wrong with it become an :class:`Outcome`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
from websockets.asyncio.client import ClientConnection, connect

from knowhub.interfaces.loadtest.checks import (
    Checked,
    check_answer,
    check_debug,
    check_health,
    check_mcp_search,
    check_search,
    check_stream,
)
from knowhub.interfaces.loadtest.mcp_raw import McpCallError, RawMcp, tool_text

__all__ = ["Outcome", "Prober", "Servers", "describe"]


@dataclass(frozen=True)
class Servers:
    """Where the servers are and how to reach them."""

    url: str
    ws_url: str
    mcp_url: str | None
    headers: dict[str, str]
    collection: str | None  # None: the servers' default (until the preflight names it)
    top_k: int
    timeout_s: float


@dataclass
class Outcome:
    endpoint: str
    started_s: float  # since the load began
    latency_ms: float
    kind: str = "ok"  # ok | error | timeout | torn
    error: str | None = None
    first_token_ms: float | None = None
    stages_ms: dict[str, float] = field(default_factory=dict)
    sources: frozenset[str] = frozenset()


Timed = tuple[Checked, float | None]  # the checks, and the first token's time (ms) if streamed


class Prober:
    """One client's connections; :meth:`call` sends one request."""

    def __init__(self, servers: Servers, http: httpx.AsyncClient, stack: AsyncExitStack) -> None:
        self.servers = servers
        self.http = http
        self._stack = stack  # closes the client's WebSocket and MCP session at its end
        self._ws: ClientConnection | None = None
        self._mcp: RawMcp | None = None
        self._asked = 0
        self._calls: dict[str, Callable[[str, float], Awaitable[Timed]]] = {
            "health": self._health,
            "search": self._search,
            "retrieval_debug": self._debug,
            "ask": self._ask,
            "ask_sse": self._ask_sse,
            "ws_stream": self._ws_stream,
            "mcp_query": self._mcp_query,
        }

    async def call(self, endpoint: str, query: str, epoch: float) -> Outcome:
        """Send one request to ``endpoint``; never raises (but for cancellation)."""
        start = time.perf_counter()
        outcome = Outcome(endpoint, round(start - epoch, 3), 0.0)
        try:
            async with asyncio.timeout(self.servers.timeout_s):
                checked, first = await self._calls[endpoint](query, start)
        except TimeoutError:
            outcome.kind, outcome.error = "timeout", f"no answer within {self.servers.timeout_s} s"
            self._drop(endpoint)
        except Exception as exc:  # any failure is a figure of the report, not the end of it
            outcome.kind, outcome.error = "error", describe(exc)
            self._drop(endpoint)
        else:
            outcome.first_token_ms = first
            outcome.stages_ms, outcome.sources = checked.stages, checked.sources
            if checked.problems:
                outcome.kind, outcome.error = "torn", "; ".join(checked.problems)[:300]
        outcome.latency_ms = round((time.perf_counter() - start) * 1000.0, 2)
        return outcome

    # -- endpoints -----------------------------------------------------------------

    async def _health(self, query: str, start: float) -> Timed:
        return check_health(await self._json("GET", "/health", None)), None

    async def _search(self, query: str, start: float) -> Timed:
        body = {"query": query, "top_k": self.servers.top_k, "collection": self.servers.collection}
        return check_search(await self._json("POST", "/api/search", body)), None

    async def _debug(self, query: str, start: float) -> Timed:
        body = {"query": query, "top_k": self.servers.top_k, "collection": self.servers.collection}
        return check_debug(await self._json("POST", "/api/retrieval/debug", body)), None

    async def _ask(self, query: str, start: float) -> Timed:
        body = {"question": query, "collection": self.servers.collection}
        return check_answer(await self._json("POST", "/api/ask", body)), None

    async def _ask_sse(self, query: str, start: float) -> Timed:
        body = {"question": query, "collection": self.servers.collection, "stream": True}
        events: list[tuple[str, Any]] = []
        first: float | None = None
        url = self.servers.url + "/api/ask"
        async with self.http.stream("POST", url, json=body, headers=self.servers.headers) as resp:
            if resp.status_code != 200:
                await resp.aread()
                raise _status_error(resp)
            async for kind, data in _sse(resp.aiter_lines()):
                if kind == "token" and first is None:
                    first = _ms(start)
                events.append((kind, data))
        return check_stream(events), first

    async def _ws_stream(self, query: str, start: float) -> Timed:
        if self._ws is None:
            self._ws = await self._stack.enter_async_context(
                connect(
                    self.servers.ws_url,
                    additional_headers=self.servers.headers,
                    proxy=None,
                    max_size=8 * 2**20,
                )
            )
        self._asked += 1
        ask = {"question": query, "collection": self.servers.collection, "id": self._asked}
        await self._ws.send(json.dumps(ask))
        events: list[tuple[str, Any]] = []
        first: float | None = None
        while not events or events[-1][0] not in ("end", "error"):
            message = json.loads(await self._ws.recv())
            if message.get("id") != self._asked:
                return Checked(
                    [f"event for question {message.get('id')!r} while {self._asked} was asked"]
                ), first
            kind = message.pop("event", "?")
            if kind == "token" and first is None:
                first = _ms(start)
            events.append((kind, message))
        return check_stream(events), first

    async def _mcp_query(self, query: str, start: float) -> Timed:
        client = await self.mcp()
        arguments = {
            "query": query,
            "top_k": min(self.servers.top_k, 20),
            "collection": self.servers.collection,
        }
        result = await client.call_tool("query_knowledge_hub", arguments)
        if result.get("isError"):
            return Checked([f"tool error: {tool_text(result)[:200]}"]), None
        return check_mcp_search(result.get("structuredContent")), None

    async def mcp(self) -> RawMcp:
        """This client's MCP session on the MCP server (opened on first use)."""
        if self._mcp is None:
            if self.servers.mcp_url is None:
                raise McpCallError("no --mcp-url given")
            client = RawMcp(self.http, self.servers.mcp_url)
            await client.open()
            self._stack.push_async_callback(client.close)
            self._mcp = client
        return self._mcp

    # -- helpers ---------------------------------------------------------------------

    async def _json(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        resp = await self.http.request(
            method, self.servers.url + path, json=body, headers=self.servers.headers
        )
        if resp.status_code != 200:
            raise _status_error(resp)
        return resp.json()

    def _drop(self, endpoint: str) -> None:
        """Forget a connection left in an unknown state (it closes when the client ends)."""
        if endpoint == "ws_stream":
            self._ws = None
        elif endpoint == "mcp_query":
            self._mcp = None


async def _sse(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, Any]]:
    kind, data = "message", list[str]()
    async for line in lines:
        if line == "":
            if data:
                yield kind, json.loads("\n".join(data))
            kind, data = "message", list[str]()
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def describe(exc: BaseException) -> str:
    """``Type: message`` of the first leaf of an exception group (task groups wrap what
    failed), cut to 300 characters."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"[:300]


def _status_error(resp: httpx.Response) -> httpx.HTTPStatusError:
    try:
        detail = str(resp.json().get("error", ""))[:200]
    except (ValueError, AttributeError):
        detail = resp.text[:200]
    return httpx.HTTPStatusError(
        f"HTTP {resp.status_code}: {detail}", request=resp.request, response=resp
    )


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 2)
