"""Run the HTTP API with uvicorn (``knowhub serve http``)."""

from __future__ import annotations

import logging
from contextlib import closing
from typing import TYPE_CHECKING

from starlette.types import ASGIApp

from knowhub.app import build_app
from knowhub.config import Settings
from knowhub.interfaces.http.api import create_app
from knowhub.interfaces.listen import bind
from knowhub.interfaces.warmup import preflight

if TYPE_CHECKING:
    import uvicorn

__all__ = ["serve", "uvicorn_config"]

log = logging.getLogger("knowhub.http")


def serve(settings: Settings, host: str, port: int, allow_unauthenticated: bool = False) -> None:
    """Serve until interrupted."""
    import uvicorn

    with closing(bind(host, port)) as sock:  # first: a taken port fails before models load
        app = build_app(settings, interface="http")
        try:
            asgi = create_app(
                settings, host=host, allow_unauthenticated=allow_unauthenticated, app=app
            )
            # Here, not only in the app's lifespan (which warms again, at once): a failed
            # check ends the start-up with its own message rather than uvicorn's
            # "Application startup failed", before anything is answered.
            log.info("%s", preflight(app))
            shown = f"[{host}]" if ":" in host else host
            log.warning("knowhub HTTP API on http://%s:%d (docs: /docs)", shown, port)
            server = uvicorn.Server(uvicorn_config(asgi, settings, host, port))
            logging.getLogger("uvicorn.error").addFilter(_DeniedHandshakeNoise())  # after config
            server.run(sockets=[sock])
        finally:
            app.close()


def uvicorn_config(asgi: ASGIApp, settings: Settings, host: str, port: int) -> uvicorn.Config:
    """How ``serve`` runs uvicorn: a WebSocket message is held to the same limit as a request
    body (a larger one closes the socket with 1009)."""
    import uvicorn

    limit = settings.server.max_body_bytes
    return uvicorn.Config(asgi, host=host, port=port, log_level="warning", ws_max_size=limit)


class _DeniedHandshakeNoise(logging.Filter):
    """Drop uvicorn's false alarm after a refused WebSocket handshake.

    The guard refuses a handshake with an HTTP response (401, 403, 421: ASGI's
    ``websocket.http.response``); uvicorn's websockets-sansio protocol sends it, then logs
    "returned without completing handshake" at ERROR as if the app had failed.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."
