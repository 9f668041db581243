"""The HTTP face of the MCP server: streamable HTTP endpoints behind one guard.

Every request passes :class:`Guard` first: Origin allow-list, Host check when bound to
loopback (DNS rebinding), body size limit, bearer token. ``/health`` answers anyone, but
tells an unauthenticated caller nothing beyond ``status``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.interfaces.mcp.access import LOCAL_USER, Principal, TokenBook
from knowhub.interfaces.mcp.metrics import Metrics

__all__ = ["PRINCIPAL_KEY", "Guard", "build_http_app", "mcp_endpoint"]

PRINCIPAL_KEY = "knowhub.principal"
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]


def mcp_endpoint(server: MCPServer, max_body_bytes: int) -> ASGIApp:
    """The server's streamable HTTP handler, for mounting on our own routes.

    The SDK's own Host/Origin checks are off: :class:`Guard` does them for every route.
    """
    server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=max_body_bytes,
    )
    return StreamableHTTPASGIApp(server.session_manager)


class Guard:
    """Origin, Host, size and bearer-token checks in front of every route."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: TokenBook,
        origins: list[str],
        hosts: list[str] | None,
        max_body_bytes: int,
        public_paths: frozenset[str] = frozenset({"/health"}),
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.origins = origins
        self.hosts = hosts
        self.max_body_bytes = max_body_bytes
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin and not _matches(origin, self.origins):
            await _error(403, f"origin {origin!r} is not allowed: add it to "
                         "server.allowed_origins")(scope, receive, send)  # fmt: skip
            return
        host = headers.get("host", "")
        if self.hosts is not None and not _matches(host, self.hosts):
            await _error(421, f"host {host!r} is not this server")(scope, receive, send)
            return
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > self.max_body_bytes:
            await _error(413, f"request body over {self.max_body_bytes} bytes")(
                scope, receive, send
            )
            return
        principal: Principal | None = LOCAL_USER
        if self.tokens:
            principal = self.tokens.lookup(headers.get("authorization"))
            if principal is None and scope["path"] not in self.public_paths:
                response = _error(401, "missing or invalid bearer token: send "
                                  "'Authorization: Bearer <token>'")  # fmt: skip
                response.headers["WWW-Authenticate"] = 'Bearer realm="knowhub"'
                await response(scope, receive, send)
                return
        scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)


def build_http_app(
    *,
    routes: list[Route],
    guard: Callable[[ASGIApp], ASGIApp],
    servers: list[MCPServer],
    metrics: Metrics,
    health: Callable[[bool], dict[str, Any]],
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
) -> ASGIApp:
    """Starlette app: ``routes`` plus /health and /metrics, every MCP server's lifespan."""

    async def health_route(request: Request) -> Response:
        authenticated = request.scope.get(PRINCIPAL_KEY) is not None
        return JSONResponse(health(authenticated))

    async def metrics_route(request: Request) -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for server in servers:
                await stack.enter_async_context(server.session_manager.run())
            async with anyio.create_task_group() as group:
                for task in background:
                    group.start_soon(task)
                yield
                group.cancel_scope.cancel()

    app = Starlette(
        routes=[
            *routes,
            Route("/health", health_route, methods=["GET"]),
            Route("/metrics", metrics_route, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    return guard(app)


def _matches(value: str, allowed: list[str]) -> bool:
    for pattern in allowed:
        if value == pattern:
            return True
        port = value[len(pattern) - 1 :]
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and port.isdigit():
            return True
    return False


def _error(status: int, message: str) -> Response:
    return Response(
        json.dumps({"error": message, "status": status}),
        status_code=status,
        media_type="application/json",
    )
