"""Assemble the HTTP API: FastAPI routes behind the same guard as the MCP server.

Outermost first: metrics (so refused requests are counted too) → :class:`Guard` (Origin,
Host, body size, bearer token; the WebSocket handshake included) → FastAPI. ``/health``,
``/ready``, ``/docs`` and ``/openapi.json`` are public: the probes tell strangers nothing, the
schema describes the API but holds no data, and a browser cannot send a token to open the
docs page. The web console (``/ui``) takes the token from its login cookie as well: see
:mod:`knowhub.interfaces.http.console`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import version
from pathlib import Path

import anyio.to_thread
from fastapi import FastAPI
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from knowhub.app import App, build_app
from knowhub.config import Settings
from knowhub.ingest.uploads import Queue
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.http import console
from knowhub.interfaces.http.boundary import add_error_handlers
from knowhub.interfaces.http.console.jobs import JobBook
from knowhub.interfaces.http.console.source_runs import SourceRuns
from knowhub.interfaces.http.deps import attach
from knowhub.interfaces.http.metrics import ApiMetrics, MetricsMiddleware
from knowhub.interfaces.http.openai_api import openai_router
from knowhub.interfaces.http.openai_wire import OpenAIErrors
from knowhub.interfaces.http.routes import routers
from knowhub.interfaces.http.service import Service
from knowhub.interfaces.http.sessions import Conversations
from knowhub.interfaces.index_metrics import IndexSize
from knowhub.interfaces.ops_metrics import track_volume
from knowhub.interfaces.security import LOOPBACK_HOSTS, Guard, TokenBook, check_bind
from knowhub.providers.stores.state import OnFirstUse

__all__ = ["PUBLIC_PATHS", "create_app"]

PUBLIC_PATHS = frozenset({"/health", "/ready", "/docs", "/docs/oauth2-redirect", "/openapi.json"})

DESCRIPTION = (
    "Search your documents and get answers with citations. Send `Authorization: Bearer "
    "<token>` when `server.tokens` are configured (WebSocket clients may use `?token=`). "
    'Errors are `{"error": message, "status": code}`.'
)


def create_app(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    allow_unauthenticated: bool = False,
    app: App | None = None,
    conversations: Conversations | None = None,
    jobs: JobBook | None = None,
    drain: Drain | None = None,
) -> ASGIApp:
    """The ASGI app serving ``settings``' data directory.

    ``host`` is where it will listen: without tokens only loopback is allowed (unless
    ``allow_unauthenticated``), and on loopback the Host header must name it. ``app``:
    an App already built (and warmed); otherwise one is built, and closed on shutdown.
    ``jobs``: the console's upload jobs (by default, queued in the data dir). ``drain``: what
    the server ends the answers in flight with when it stops.
    """
    tokens = TokenBook(settings)
    loopback = check_bind(tokens, host, allow_unauthenticated)
    served = app or build_app(settings, interface="http")
    # Sign-ins, conversations and upload jobs live in the store: every replica of it
    # serves every browser and conversation (docs/deployment.md). Opened at first use: the
    # start-up checks open the store, after these parts are built.
    shared = OnFirstUse(lambda: served.runtime.store)
    tokens.sessions.share(shared)
    service = _service(settings, served, conversations or Conversations(state=shared), drain)
    jobs = jobs or JobBook(Queue(settings.data_dir), shared)
    jobs.turn = service.app.runtime.writing  # one change at a time, whoever asks
    runs = SourceRuns()  # the console's websites and repositories, fetched in the background
    api = FastAPI(
        title="knowhub",
        version=version("knowhub"),
        description=DESCRIPTION,
        lifespan=_lifespan(service, jobs, runs, owned=app is None),
        max_body_size=settings.server.max_body_bytes,
        # Nothing leaves the machine unless asked: no OpenTelemetry from FastAPI itself.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    attach(api, service, tokens)
    api.state.jobs = jobs  # what console.manage.jobs_of finds
    api.state.source_runs = runs  # what console.sources.runs_of finds
    parts = [*routers(), openai_router(), console.console_router()]
    for part in parts:
        api.include_router(part)
    add_error_handlers(api)
    guarded = Guard(
        api,
        tokens,
        settings.server.allowed_origins,
        LOOPBACK_HOSTS if loopback else None,
        settings.server.max_body_bytes,
        PUBLIC_PATHS | console.PUBLIC_PATHS,
        console.CONSOLE_LOGIN,
        console.UPLOAD_PATHS,
    )
    paths = _paths([*api.routes, *(route for part in parts for route in part.routes)])
    return MetricsMiddleware(OpenAIErrors(guarded), service.metrics, paths)


def _service(
    settings: Settings, app: App, conversations: Conversations, drain: Drain | None
) -> Service:
    service = Service(app, settings, ApiMetrics(), conversations, drain or Drain())
    service.metrics.track_index(lambda: [IndexSize.of(c) for c in service.app.collections()])
    track_volume(service.metrics.registry, Path(settings.data_dir))
    return service


def _lifespan(
    service: Service, jobs: JobBook, runs: SourceRuns, owned: bool
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Warm up and resume the uploads a stop cut short before serving; close the App on
    shutdown if ``create_app`` built it."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            # Before the first request (uvicorn listens only after this): models loaded,
            # /ready says 200. Quick when ``serve`` has warmed the App already.
            await anyio.to_thread.run_sync(service.health.warm)
            await anyio.to_thread.run_sync(console.resume_uploads, service, jobs)
            yield
        finally:
            jobs.stop()  # before the App closes under their ingest: they resume next start
            runs.stop()  # no queued source run starts (the one under way: stop_ingests)
            await anyio.to_thread.run_sync(service.chats.close)  # the chats' MCP servers
            if owned:
                service.app.close()

    return lifespan


def _paths(routes: list[BaseRoute]) -> frozenset[str]:
    return frozenset(
        path for route in routes if isinstance(path := getattr(route, "path", None), str)
    )
