"""Assemble and run the MCP server for ``knowhub serve mcp``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any, Literal, Protocol, cast

import anyio
import anyio.to_thread
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.caller import Caller
from knowhub.config import Settings
from knowhub.errors import ConfigError, KnowhubError
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.index_metrics import IndexSize, counts
from knowhub.interfaces.listen import bind
from knowhub.interfaces.mcp.dataserver import DataServer
from knowhub.interfaces.mcp.early import Wire
from knowhub.interfaces.mcp.http import build_http_app, mcp_endpoint
from knowhub.interfaces.mcp.local import LocalService
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.shared import SessionRegistry
from knowhub.interfaces.mcp.tools.answer import AnswerTools
from knowhub.interfaces.mcp.tools.base import Resolve, Target, ToolGroup
from knowhub.interfaces.mcp.tools.control import ControlTools
from knowhub.interfaces.mcp.tools.documents import DocumentTools
from knowhub.interfaces.mcp.tools.ingest import IngestTools
from knowhub.interfaces.mcp.tools.reading import ReadTools
from knowhub.interfaces.mcp.tools.search import SearchTools
from knowhub.interfaces.mcp.toolserver import ToolServer, principal_of
from knowhub.interfaces.ops_metrics import track_volume
from knowhub.interfaces.security import LOOPBACK_HOSTS, PRINCIPAL_KEY, Guard, TokenBook, check_bind
from knowhub.interfaces.warmup import preflight, preflight_shared, warm
from knowhub.lang import load_tokenizers

__all__ = [
    "Closable",
    "ServeOptions",
    "build_local",
    "build_shared",
    "http_app",
    "serve",
]

log = logging.getLogger("knowhub.mcp")

# Shared mode's /mcp: the data (and its instructions) are on each session's /mcp/<id>.
CONTROL = (
    "knowhub shared mode: register a folder with `register` to get its session, then "
    "connect to /mcp/<session_id>, whose tools search that folder's documents."
)


class Closable(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class ServeOptions:
    transport: Literal["stdio", "http"] = "stdio"
    mode: Literal["local", "shared"] = "local"
    host: str = "127.0.0.1"
    port: int = 8080
    docs: Path = Path("docs")
    path_root: Path = Path()
    idle_timeout_s: float | None = 1800.0
    read_only: bool = False
    allow_unauthenticated: bool = False


def _data_server(resolve: Resolve, metrics: Metrics) -> DataServer:
    """The tools' server, with the documents as resources and instructions per caller."""
    return DataServer("knowhub", version=version("knowhub"), metrics=metrics, resolve=resolve)


def build_local(
    settings: Settings, options: ServeOptions, metrics: Metrics, drain: Drain | None = None
) -> tuple[MCPServer, LocalService]:
    service = LocalService(settings, options.docs, metrics, watch=True)

    @asynccontextmanager
    async def resolve(ctx: Context) -> AsyncIterator[Target]:
        yield Target(service.kb, principal_of(ctx), service.docs, "local")

    server = _data_server(resolve, metrics)
    server.add_groups(*_data_tools(resolve, settings, metrics, options.read_only, drain))
    service.kb.on_change.append(server.documents_changed)
    return server, service


def build_shared(
    settings: Settings, options: ServeOptions, metrics: Metrics, drain: Drain | None = None
) -> tuple[MCPServer, MCPServer, SessionRegistry]:
    registry = SessionRegistry(settings, options.path_root, options.idle_timeout_s, metrics)
    load_tokenizers()  # each session's App warms as it loads; the tokenizers are shared

    @asynccontextmanager
    async def resolve(ctx: Context) -> AsyncIterator[Target]:
        principal = principal_of(ctx)
        request = ctx.request_context.request
        session_id = str(getattr(request, "path_params", {}).get("session_id", ""))
        if not principal.may_use(session_id):
            raise ToolError(f"unknown session {session_id!r}")
        try:
            record, kb = await anyio.to_thread.run_sync(lambda: registry.acquire(session_id))
        except KnowhubError as exc:
            raise ToolError(str(exc)) from exc
        try:
            yield Target(kb, principal, Path(record.path), session_id)
        finally:
            registry.release(session_id)

    data = _data_server(resolve, metrics)
    data.add_groups(*_data_tools(resolve, settings, metrics, options.read_only, drain))
    control = ToolServer(
        "knowhub-control", instructions=CONTROL, version=version("knowhub"), metrics=metrics
    )
    control.add_groups(ControlTools(registry, options.read_only))
    return data, control, registry


def _data_tools(
    resolve: Resolve, settings: Settings, metrics: Metrics, read_only: bool, drain: Drain | None
) -> list[ToolGroup]:
    """Search, browse, answer, and (unless ``read_only``) ingest, in the order tools/list
    shows."""
    groups: list[ToolGroup] = [
        SearchTools(resolve, settings.server, metrics),
        DocumentTools(resolve, settings.server, metrics),
        ReadTools(resolve, settings.server, metrics),
        AnswerTools(resolve, settings.server, metrics, drain or Drain()),
    ]
    if not read_only:
        groups.append(IngestTools(resolve, settings.server, metrics))
    return groups


def serve(settings: Settings, options: ServeOptions, wire: Wire | None = None) -> None:
    """Run until interrupted; stdio goes through ``wire`` (started before this module's
    import, so it may have answered the handshake already) or a new one."""
    if options.transport == "stdio":
        if options.mode == "shared":
            raise ConfigError("--mode shared needs --transport http (one process, many clients)")
        _serve_stdio(settings, options, wire or Wire(None, settings.server.max_body_bytes))
    else:
        _serve_http(settings, options)


def _serve_stdio(settings: Settings, options: ServeOptions, wire: Wire) -> None:
    server, service = build_local(settings, options, Metrics())
    # In the background: a client waits for `initialize` and `tools/list` before it calls
    # anything, and a call that comes before the models are loaded waits for them (each
    # loads once, under a lock). Warming in front of them cost ~2.4 s of start-up.
    threading.Thread(target=_warm_then_start, args=(service,), name="warm-up", daemon=True).start()
    try:
        anyio.run(_run_stdio, server, wire)
    finally:
        _stop_ingests()  # the first sync or the watcher's: else the exit waits for its end
        service.close()


async def _run_stdio(server: MCPServer, wire: Wire) -> None:
    """The SDK's stdio transport over ``wire`` (MCPServer.run_stdio_async takes no
    streams: its low-level server is run directly). The tools may change under a client
    that got the cached list (early.py): the capabilities say it will be told."""
    # Duck-typed files: readline, and write and flush, are all the SDK calls.
    stdin = anyio.wrap_file(cast(IO[str], wire.sdk_stdin))
    stdout = anyio.wrap_file(cast(IO[str], wire.sdk_stdout))
    lowlevel = server._lowlevel_server
    changes = NotificationOptions(tools_changed=True, resources_changed=True)
    init = lowlevel.create_initialization_options(changes)
    async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, init)


def _stop_ingests() -> None:
    # Imported here: ingest (loaders, worker pools) is no part of the server's start.
    from knowhub.ingest.pipeline import stop_ingests

    stop_ingests()


def _warm_then_start(service: LocalService) -> None:
    """Warm-up off the protocol's path, then the first sync and the watcher, in that order
    as before (no two threads build the same provider). A setting the warm-up finds bad is
    logged here and fails each call that needs the provider, with the same message."""
    try:
        warm(service.kb.reader)
    except KnowhubError as exc:
        log.error("warm-up failed: %s", exc)
    finally:
        service.start()


@dataclass(frozen=True)
class _Served:
    """What the HTTP app of one mode serves, and how it reports on it."""

    servers: list[MCPServer]
    routes: list[Route]
    status: Callable[[Caller], dict[str, Any]]  # /health's details for a caller
    closer: Closable
    background: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)


def http_app(settings: Settings, options: ServeOptions, drain: Drain) -> tuple[ASGIApp, Closable]:
    """The ASGI app for ``options`` and the object to close when it stops (``drain``: what
    ends the ``ask`` calls in flight when the server stops)."""
    tokens = TokenBook(settings)
    loopback = check_bind(tokens, options.host, options.allow_unauthenticated)
    metrics = Metrics()
    track_volume(metrics.registry, Path(settings.data_dir))
    started = time.time()
    parts = _http_local if options.mode == "local" else _http_shared
    served = parts(settings, options, metrics, drain)

    def health(principal: Caller | None) -> dict[str, Any]:
        if principal is None:
            return {"status": "ok"}
        return {
            "status": "ok",
            "mode": options.mode,
            "uptime_s": round(time.time() - started, 1),
            **served.status(principal),
        }

    def guard(app: ASGIApp) -> ASGIApp:
        hosts = LOOPBACK_HOSTS if loopback else None
        return Guard(
            app, tokens, settings.server.allowed_origins, hosts, settings.server.max_body_bytes
        )

    app = build_http_app(
        routes=served.routes,
        guard=guard,
        servers=served.servers,
        metrics=metrics,
        health=health,
        background=served.background,
    )
    return app, served.closer


def _http_local(
    settings: Settings, options: ServeOptions, metrics: Metrics, drain: Drain
) -> _Served:
    server, service = build_local(settings, options, metrics, drain)
    # Before the first request (and the first sync): the start-up checks, then models,
    # tokenizers and indexes load once, here, instead of in every thread of a burst of
    # first requests.
    log.info("%s", preflight(service.kb.reader))
    routes = [Route("/mcp", mcp_endpoint(server, settings.server.max_body_bytes))]

    def sizes() -> list[IndexSize]:
        return [IndexSize.of(c) for c in service.kb.reader.collections()]

    def status(principal: Caller) -> dict[str, Any]:
        indexing = {"indexing": not service.ready.is_set()}
        if not principal.unlimited:  # its collections' counts only
            return {**counts(sizes, principal), **indexing}
        return {"sessions": 1, "loaded": 1, "chunks": service.kb.chunks(), **indexing}

    metrics.track_index(sizes)
    service.start()
    return _Served([server], routes, status, service)


def _http_shared(
    settings: Settings, options: ServeOptions, metrics: Metrics, drain: Drain
) -> _Served:
    log.info("%s", preflight_shared(settings))
    data, control, registry = build_shared(settings, options, metrics, drain)
    limit = settings.server.max_body_bytes
    data_endpoint = mcp_endpoint(data, limit)
    routes = [
        Route("/mcp", mcp_endpoint(control, limit)),
        Route("/mcp/{session_id}", _SessionGate(registry, data_endpoint)),
    ]

    def status(principal: Caller) -> dict[str, Any]:
        if not principal.unlimited:  # no session counts: those of its loaded sessions' collections
            return counts(registry.index_sizes, principal)
        rows = registry.sessions()
        return {
            "sessions": len(rows),
            "loaded": sum(1 for _, loaded, _ in rows if loaded),
            "chunks": sum(c or 0 for _, _, c in rows),
        }

    metrics.track_index(registry.index_sizes)
    # Even when sessions never idle out: one unregistered through another replica is
    # unloaded here by it.
    return _Served([data, control], routes, status, registry, [_reaper(registry)])


def _serve_http(settings: Settings, options: ServeOptions) -> None:
    from knowhub.interfaces.serving import run

    with closing(bind(options.host, options.port)) as sock:  # first: fail before any work
        drain = Drain()
        app, closer = http_app(settings, options, drain)
        shown = f"[{options.host}]" if ":" in options.host else options.host
        log.warning("knowhub MCP (%s mode) on http://%s:%d/mcp", options.mode, shown, options.port)
        try:
            # On the signal, before uvicorn waits for the requests in flight: an `ingest`
            # or `register` call would hold the shutdown until its last document.
            started = run(app, sock, settings.server, drain, on_signal=_stop_ingests)
        finally:
            _stop_ingests()  # one in a background thread (local mode's sync) would hold the exit
            closer.close()
    if not started:
        raise SystemExit(3)  # as uvicorn.run(): the start-up failed, logged above


class _SessionGate:
    """404 for a session that does not exist or that the token may not use.

    A class, not a function: Starlette treats a plain function as a request handler.
    """

    def __init__(self, registry: SessionRegistry, endpoint: ASGIApp) -> None:
        self.registry = registry
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = scope.get("path_params", {}).get("session_id", "")
        principal: Caller | None = scope.get(PRINCIPAL_KEY)
        known = await anyio.to_thread.run_sync(self.registry.exists, session_id)
        if principal is None or not principal.may_use(session_id) or not known:
            response = Response(
                '{"error": "unknown session: register the folder on /mcp first", "status": 404}',
                status_code=404,
                media_type="application/json",
            )
            await response(scope, receive, send)
            return
        await self.endpoint(scope, receive, send)


def _reaper(registry: SessionRegistry) -> Callable[[], Coroutine[Any, Any, None]]:
    interval = max(1.0, min(30.0, (registry.idle_timeout_s or 60.0) / 4))

    async def loop() -> None:
        while True:
            await anyio.sleep(interval)
            try:
                await anyio.to_thread.run_sync(registry.unload_idle)
            except Exception:  # sessions.sqlite3 locked or unreadable for now: next time
                # Escaping, it would end the lifespan's task group and with it every MCP
                # session manager, while /health went on answering.
                log.exception("the idle-session check failed; it runs again in %.0f s", interval)

    return loop
