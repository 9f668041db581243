"""Run an ASGI app with uvicorn as both HTTP servers do (``serve http``, ``serve mcp``).

Three things uvicorn decides by itself are decided here, from the settings:

* **Whose forwarding headers count.** uvicorn believes ``X-Forwarded-For`` and
  ``X-Forwarded-Proto`` from ``FORWARDED_ALLOW_IPS``, 127.0.0.1 and ::1 unless set: any
  local process could then claim any client address, and escape the wrong-token lockout
  by claiming a new one each time. Here only ``server.trusted_proxies`` are believed (none
  by default; ``FORWARDED_ALLOW_IPS`` is not read). ``X-Real-IP`` and ``Forwarded`` are
  never read.
* **Where its log lines go.** uvicorn installs its own handlers (its format, on stderr,
  access lines on stdout) unless told not to: here its loggers propagate to the process's
  handlers, as knowhub's own do (``serve``'s format and ``--log-file``, control characters
  in them shown: :class:`~knowhub.interfaces.terminal.PrintableFormatter`).
* **How long a stop may take.** See :mod:`knowhub.interfaces.drain`: on SIGTERM the server
  stops listening, answers in flight get ``server.shutdown_grace_s``, then end with an
  error event; any other request still running after that is cut.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from knowhub.config import ServerSettings
from knowhub.interfaces.drain import TELL_S, Drain

__all__ = ["config", "run"]

log = logging.getLogger("knowhub.server")


def config(
    app: ASGIApp, host: str, port: int, settings: ServerSettings, **options: Any
) -> uvicorn.Config:
    """uvicorn's Config for ``app`` on ``host:port``; ``options`` are more of its fields."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        log_config=None,  # its loggers reach the process's handlers (the module's docstring)
        proxy_headers=True,
        forwarded_allow_ips=list(settings.trusted_proxies),  # []: nobody's headers count
        **options,
    )


def run(
    app: ASGIApp,
    sock: socket.socket,
    settings: ServerSettings,
    drain: Drain,
    on_signal: Callable[[], None] = lambda: None,
    **options: Any,
) -> bool:
    """Serve ``app`` on ``sock`` until SIGTERM or Ctrl-C; whether it started at all.

    ``on_signal`` runs first thing on the signal (in the signal handler: keep it short);
    ``options`` are more of uvicorn's Config.
    """
    if "FORWARDED_ALLOW_IPS" in os.environ:
        log.warning("FORWARDED_ALLOW_IPS is not read: name the proxies in server.trusted_proxies")
    host, port = sock.getsockname()[:2]
    uvicorn_config = config(app, host, port, settings, **options)
    server = _Server(uvicorn_config, drain, settings.shutdown_grace_s, on_signal)
    server.run(sockets=[sock])
    return server.started


class _Server(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        drain: Drain,
        grace_s: float,
        on_signal: Callable[[], None],
    ) -> None:
        super().__init__(config)
        self.drain = drain
        self.grace_s = grace_s
        self.on_signal = on_signal

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.on_signal()
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop listening, end the answers in flight (the drain), then uvicorn's own
        shutdown, which waits for the other requests only what is left of the grace."""
        started = time.monotonic()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        await self.drain.end(self.grace_s, hurry=lambda: self.force_exit)
        left = self.grace_s - (time.monotonic() - started)
        # Read by uvicorn's shutdown: then it cancels what still runs. At least TELL_S, so a
        # response that has just been given its last event can still go out.
        self.config.timeout_graceful_shutdown = math.ceil(max(left, TELL_S))
        await super().shutdown(sockets)
