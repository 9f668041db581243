"""Bind a server's socket before anything says it is listening.

uvicorn binds only once it runs: a server would log "listening on …", warm its models,
and then die with uvicorn's bare ``[Errno 98] … address already in use``. Binding here
first, with the options to change named, makes a taken port a one-line start-up error.
"""

from __future__ import annotations

import errno
import socket

from knowhub.errors import ConfigError

__all__ = ["bind"]


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port``, for ``uvicorn.Server.run(sockets=[…])``.

    Raises:
        ConfigError: the address cannot be bound; the message names --host or --port.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    # As uvicorn does: a restart may rebind while the old connections sit in TIME_WAIT
    # (it never lets two servers listen on one port).
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        # Listening at once: with SO_REUSEADDR two servers started together could both
        # bind, and the second would then fail later with uvicorn's raw [Errno 98].
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(_refusal(exc, host, port)) from exc
    sock.set_inheritable(True)
    return sock


def _refusal(exc: OSError, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    if isinstance(exc, socket.gaierror):
        return (
            f"--host {host!r} cannot be resolved ({exc.strerror}): give an address or a known name"
        )
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} is in use on {shown}: choose another with --port, or stop the "
            "server that holds it"
        )
    if exc.errno == errno.EACCES:
        return (
            f"port {port} on {shown} needs privileges this user lacks (ports below 1024 "
            "usually do): choose another with --port"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"--host {host} is not an address of this machine: give one of its addresses"
    return f"cannot listen on {shown}:{port} ({exc.strerror}): check --host and --port"
