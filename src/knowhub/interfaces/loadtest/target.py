"""Where a load test may point: servers on this machine only.

A load test floods its target; pointed at someone else's server it is an attack. So every
URL must name a loopback host (``localhost``, ``127.0.0.0/8``, ``::1``), checked before any
request is sent.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from knowhub.errors import ConfigError

__all__ = ["loopback_url", "websocket_url"]


def loopback_url(url: str, option: str) -> str:
    """``url`` without a trailing slash, if it is http(s) on a loopback host; else ConfigError."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{option} {url!r} is not an http:// URL: give one like http://127.0.0.1:8000"
        )
    if not _is_loopback(parts.hostname):
        raise ConfigError(
            f"{option} {url!r} is not on this machine (host {parts.hostname!r}): the load test "
            "only drives servers on loopback (localhost, 127.0.0.0/8, ::1); run it on the "
            "server's machine against 127.0.0.1"
        )
    if parts.username or parts.password:
        raise ConfigError(
            f"{option} must not carry credentials in the URL: pass the token with --token-env"
        )
    return url.rstrip("/")


def websocket_url(base: str, path: str) -> str:
    """The ws:// (or wss://) URL of ``path`` on the server at ``base``."""
    scheme, rest = base.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}{path}"


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost: it could resolve anywhere
        return False
