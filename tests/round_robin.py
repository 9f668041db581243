"""A round-robin HTTP proxy for the tests: each request goes to the next upstream in turn.

What a load balancer without sticky routing does: a client's requests land on the
replicas in turn, whatever connection, session header or cookie they carry. Responses
are streamed through as they come (an SSE stream of progress notifications arrives
notification by notification). Each request relayed is noted (:attr:`RoundRobin.served`)
so that a test can show that every replica answered. The client's Host header is relayed
as it came (a browser's Origin must match it), as a load balancer passing ``$host`` does.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio
import httpx2 as httpx
import uvicorn
from starlette.types import Receive, Scope, Send

from tests.helpers import WAIT_S, free_port
from tests.mcp_helpers import wait_until

__all__ = ["RoundRobin", "Served", "round_robin"]

# Hop-by-hop headers: never relayed.
_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"}


@dataclass(frozen=True)
class Served:
    """One request relayed: to which upstream, its HTTP method and path, and its JSON-RPC
    method."""

    upstream: str
    method: str
    path: str
    rpc: str | None


@dataclass
class RoundRobin:
    """The ASGI proxy over ``upstreams`` (base URLs), at ``url`` once it runs."""

    upstreams: list[str]
    url: str = ""
    served: list[Served] = field(default_factory=list)
    _turn: Iterator[int] = field(default_factory=itertools.count)

    def upstreams_of(self, rpc: str) -> set[str]:
        """The upstreams that answered a JSON-RPC ``rpc`` request."""
        return {s.upstream for s in self.served if s.rpc == rpc}

    def served_by(self, prefix: str) -> set[str]:
        """The upstreams that answered the requests whose method and path start with
        ``prefix`` (``GET /ui``)."""
        return {s.upstream for s in self.served if f"{s.method} {s.path}".startswith(prefix)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: nothing to start
            return
        upstream = self.upstreams[next(self._turn) % len(self.upstreams)]
        body = await _body(receive)
        path = scope["path"]
        self.served.append(Served(upstream, scope["method"], path, _rpc_method(body)))
        url = upstream + scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            url += "?" + scope["query_string"].decode("latin-1")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        async with anyio.create_task_group() as group:
            # A client that goes away (a listen stream closed) ends the relay, and with it
            # the upstream request, as a load balancer does.
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            await _relay(scope["method"], url, headers, body, send)
            group.cancel_scope.cancel()


async def _relay(
    method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes, send: Send
) -> None:
    async with (
        httpx.AsyncClient(timeout=WAIT_S) as client,
        client.stream(method, url, headers=headers, content=body) as response,
    ):
        relayed = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP]
        await send(
            {"type": "http.response.start", "status": response.status_code, "headers": relayed}
        )
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


def _rpc_method(body: bytes) -> str | None:
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    method = decoded.get("method") if isinstance(decoded, dict) else None
    return method if isinstance(method, str) else None


@contextmanager
def round_robin(*upstreams: str) -> Iterator[tuple[str, RoundRobin]]:
    """Run the proxy over ``upstreams`` on a free loopback port until the block ends;
    yield its base URL and the proxy."""
    port = free_port()
    proxy = RoundRobin(list(upstreams), f"http://127.0.0.1:{port}")
    server = uvicorn.Server(
        uvicorn.Config(
            proxy,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=WAIT_S,
        )
    )
    thread = threading.Thread(target=server.run, name="round-robin", daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started or not thread.is_alive())
        assert server.started, "the round-robin proxy did not start"
        yield proxy.url, proxy
    finally:
        server.should_exit = True
        thread.join(WAIT_S)
