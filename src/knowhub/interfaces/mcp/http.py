"""The HTTP face of the MCP server: streamable HTTP endpoints, /health and /metrics.

Every request passes :class:`~knowhub.interfaces.security.Guard` first. ``/health``
answers anyone, but tells an unauthenticated caller nothing beyond ``status``, and a limited
token only what it may read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.caller import Caller
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.security import PRINCIPAL_KEY

__all__ = ["build_http_app", "mcp_endpoint"]


def mcp_endpoint(server: MCPServer, max_body_bytes: int) -> ASGIApp:
    """The server's streamable HTTP handler, for mounting on our own routes.

    Stateless for every protocol revision, so that any replica answers any request: a
    2026-07-28 request is one self-contained POST (the SDK routes it by its
    ``MCP-Protocol-Version`` header), and an older client's ``initialize`` opens no session
    either (no ``Mcp-Session-Id``: each POST is answered on its own, its progress on its own
    response stream). What an older client loses is the standing GET stream, i.e. a
    notification sent outside any request; see docs/decisions.md. The SDK's own Host/Origin
    checks are off: :class:`Guard` does them for every route.
    """
    server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=max_body_bytes,
        stateless_http=True,
    )
    return _NoStandingStream(StreamableHTTPASGIApp(server.session_manager))


class _NoStandingStream:
    """``GET`` answers 405, as the protocol has a server that offers no stream outside a
    request answer it. The SDK's stateless transport would open an SSE response instead that
    nothing is ever written to (no session ties a notification to it), held open by each
    older client that asks for one (the TypeScript SDK's, the Inspector's) until it leaves."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            refused = Response(status_code=405, headers={"Allow": "POST"})
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


def build_http_app(
    *,
    routes: list[Route],
    guard: Callable[[ASGIApp], ASGIApp],
    servers: list[MCPServer],
    metrics: Metrics,
    health: Callable[[Caller | None], dict[str, Any]],
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
) -> ASGIApp:
    """Starlette app: ``routes`` plus /health and /metrics, every MCP server's lifespan."""

    # Each in a worker thread: a limited token's counts and the index sizes read the store,
    # which must not hold the event loop (every other request) meanwhile.
    async def health_route(request: Request) -> Response:
        principal = request.scope.get(PRINCIPAL_KEY)
        return JSONResponse(await anyio.to_thread.run_sync(health, principal))

    async def metrics_route(request: Request) -> Response:
        principal = request.scope.get(PRINCIPAL_KEY)
        body = await anyio.to_thread.run_sync(metrics.render, principal)
        return Response(body, media_type="text/plain; version=0.0.4")

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
