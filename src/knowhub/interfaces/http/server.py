"""Run the HTTP API with uvicorn (``knowhub serve http``)."""

from __future__ import annotations

import logging
from contextlib import closing
from typing import Any

from knowhub.app import build_app
from knowhub.config import Settings
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.http.api import create_app
from knowhub.interfaces.listen import bind
from knowhub.interfaces.sources import SourceRefresher
from knowhub.interfaces.warmup import preflight

__all__ = ["serve", "uvicorn_options"]

log = logging.getLogger("knowhub.http")


def serve(settings: Settings, host: str, port: int, allow_unauthenticated: bool = False) -> None:
    """Serve until interrupted."""
    from knowhub.interfaces.serving import run

    with closing(bind(host, port)) as sock:  # first: a taken port fails before models load
        app = build_app(settings, interface="http")
        try:
            drain = Drain()
            asgi = create_app(
                settings,
                host=host,
                allow_unauthenticated=allow_unauthenticated,
                app=app,
                drain=drain,
            )
            # Here, not only in the app's lifespan (which warms again, at once): a failed
            # check ends the start-up with its own message rather than uvicorn's
            # "Application startup failed", before anything is answered.
            log.info("%s", preflight(app))
            shown = f"[{host}]" if ":" in host else host
            log.warning("knowhub HTTP API on http://%s:%d (docs: /docs)", shown, port)
            logging.getLogger("uvicorn.error").addFilter(_DeniedHandshakeNoise())
            refresher = SourceRefresher(settings, lambda: app)  # sources: on their interval
            refresher.start()
            try:
                run(asgi, sock, settings.server, drain, **uvicorn_options(settings))
            finally:
                _stop_ingests()  # a source's refresh in flight would hold the exit
                refresher.stop()
        finally:
            app.close()


def _stop_ingests() -> None:
    from knowhub.ingest.stopping import stop_ingests  # ingest loads only when it is used

    stop_ingests()


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What ``serve`` sets of uvicorn's Config beyond :func:`knowhub.interfaces.serving.config`:
    a WebSocket message is held to the same limit as a request body (a larger one closes the
    socket with 1009)."""
    return {"ws_max_size": settings.server.max_body_bytes}


class _DeniedHandshakeNoise(logging.Filter):
    """Drop uvicorn's false alarm after a refused WebSocket handshake.

    The guard refuses a handshake with an HTTP response (401, 403, 421: ASGI's
    ``websocket.http.response``); uvicorn's websockets-sansio protocol sends it, then logs
    "returned without completing handshake" at ERROR as if the app had failed.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."
