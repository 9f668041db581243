"""Who is calling, and the checks every HTTP request passes (MCP server and HTTP API).

Bearer tokens come from the configuration (secrets from the environment); :class:`Guard`
is the ASGI middleware in front of every route: Origin allow-list, Host check when bound
to loopback (DNS rebinding), body size limit, bearer token (or, for browser pages under a
:class:`CookieLogin` prefix only, the same token in a cookie).
"""

from __future__ import annotations

import hmac
import json
import logging
from dataclasses import dataclass
from urllib.parse import quote

from starlette.datastructures import Headers, QueryParams
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.config import Settings
from knowhub.errors import AuthError, ConfigError

__all__ = [
    "LOCAL_USER",
    "LOOPBACK_HOSTS",
    "PRINCIPAL_KEY",
    "CookieLogin",
    "Guard",
    "Principal",
    "TokenBook",
    "check_bind",
]

log = logging.getLogger("knowhub.security")

PRINCIPAL_KEY = "knowhub.principal"
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]


@dataclass(frozen=True)
class Principal:
    """A caller and its limits; ``"*"`` in a set allows everything."""

    name: str
    collections: frozenset[str] = frozenset({"*"})
    sessions: frozenset[str] = frozenset({"*"})
    read_only: bool = False

    def may_read(self, collection: str) -> bool:
        return "*" in self.collections or collection in self.collections

    def may_use(self, session_id: str) -> bool:
        return "*" in self.sessions or session_id in self.sessions

    def check_read(self, collection: str) -> None:
        if not self.may_read(collection):
            raise AuthError(f"token {self.name!r} may not read collection {collection!r}")

    def check_write(self, what: str) -> None:
        if self.read_only:
            raise AuthError(f"token {self.name!r} is read-only: it may not {what}")


LOCAL_USER = Principal("local")
"""The caller on stdio or on an HTTP server with no tokens (localhost only)."""


class TokenBook:
    """The configured tokens, compared in constant time."""

    def __init__(self, settings: Settings) -> None:
        self._entries: list[tuple[bytes, Principal]] = []
        for spec in settings.server.tokens:
            secret = settings.secret(spec.token_env)
            if not secret:
                raise ConfigError(
                    f"server.tokens[{spec.name!r}]: environment variable {spec.token_env} is "
                    "not set; export the token there or remove the entry"
                )
            principal = Principal(
                spec.name, frozenset(spec.collections), frozenset(spec.sessions), spec.read_only
            )
            self._entries.append((secret.encode(), principal))

    def __bool__(self) -> bool:
        return bool(self._entries)

    def lookup(self, authorization: str | None) -> Principal | None:
        """The principal for an ``Authorization: Bearer …`` header, or None."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = token.strip().encode()
        found = None
        for secret, principal in self._entries:
            # Every entry is compared, so timing tells nothing about which one matched.
            if hmac.compare_digest(secret, given):
                found = principal
        return found


@dataclass(frozen=True)
class CookieLogin:
    """Browser pages under ``prefix`` (the web console) may carry the token in a cookie.

    A browser cannot add an ``Authorization`` header to a link it follows, so there, and only
    there, the token may come in the ``cookie`` a login form set (HttpOnly, SameSite=Strict:
    another site's page cannot make the browser send it). A page asked for without a valid
    token is redirected to ``login_path``.
    """

    prefix: str
    cookie: str
    login_path: str

    def covers(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")


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
        cookie_login: CookieLogin | None = None,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.origins = origins
        self.hosts = hosts
        self.max_body_bytes = max_body_bytes
        self.public_paths = public_paths
        self.cookie_login = cookie_login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # WebSocket handshakes get the same checks (a browser sends Origin on them too).
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin and not _matches(origin, self.origins):
            await _refuse(_error(403, f"origin {origin!r} is not allowed: add it to "
                                 "server.allowed_origins"), scope, receive, send)  # fmt: skip
            return
        host = headers.get("host", "")
        if self.hosts is not None and not _matches(host, self.hosts):
            await _refuse(_error(421, f"host {host!r} is not this server"), scope, receive, send)
            return
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > self.max_body_bytes:
            await _error(413, f"request body over {self.max_body_bytes} bytes")(
                scope, receive, send
            )
            return
        principal: Principal | None = LOCAL_USER
        if self.tokens:
            principal = self.tokens.lookup(_authorization(scope, headers, self.cookie_login))
            if principal is None and scope["path"] not in self.public_paths:
                await _refuse(self._unauthenticated(scope), scope, receive, send)
                return
        scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)

    def _unauthenticated(self, scope: Scope) -> Response:
        """A browser page goes to the login form (and back after it); anything else gets 401."""
        login = self.cookie_login
        if (
            login is not None
            and scope["type"] == "http"
            and scope["method"] in ("GET", "HEAD")
            and login.covers(scope["path"])
        ):
            query = scope.get("query_string", b"").decode("latin-1")
            back = scope["path"] + (f"?{query}" if query else "")
            return RedirectResponse(f"{login.login_path}?next={quote(back, safe='')}", 303)
        response = _error(401, "missing or invalid bearer token: send "
                          "'Authorization: Bearer <token>'")  # fmt: skip
        response.headers["WWW-Authenticate"] = 'Bearer realm="knowhub"'
        return response


def check_bind(tokens: TokenBook, host: str, allow_unauthenticated: bool) -> bool:
    """Refuse to serve beyond loopback without a token unless told to; True for loopback."""
    loopback = host in ("127.0.0.1", "localhost", "::1")
    if not tokens and not loopback:
        if not allow_unauthenticated:
            raise ConfigError(
                f"--host {host} exposes the server beyond this machine with no token: "
                "configure server.tokens, or pass --allow-unauthenticated if you really mean it"
            )
        log.warning("serving %s with NO authentication: anyone who reaches it can use it", host)
    return loopback


def _matches(value: str, allowed: list[str]) -> bool:
    for pattern in allowed:
        if value == pattern:
            return True
        port = value[len(pattern) - 1 :]
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and port.isdigit():
            return True
    return False


def _authorization(scope: Scope, headers: Headers, login: CookieLogin | None) -> str | None:
    """The Authorization header; on a WebSocket handshake without one, ``?token=``; on a
    browser page under ``login``'s prefix without one, its cookie.

    Browsers cannot set headers on a WebSocket, so only there may the token ride in the
    URL (compared exactly like the header's); nor on a page link, so only there the cookie.
    """
    found = headers.get("authorization")
    if found is None and scope["type"] == "websocket":
        token = QueryParams(scope.get("query_string", b"")).get("token")
        found = f"Bearer {token}" if token else None
    if (
        found is None
        and login is not None
        and scope["type"] == "http"
        and login.covers(scope["path"])
    ):
        token = cookie_parser(headers.get("cookie", "")).get(login.cookie)
        found = f"Bearer {token}" if token else None
    return found


async def _refuse(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """Send ``response``; a WebSocket handshake gets it as its HTTP denial, or else a close."""
    if scope["type"] == "http" or "websocket.http.response" in scope.get("extensions", {}):
        await response(scope, receive, send)
        return
    await send({"type": "websocket.close", "code": 1008, "reason": ""})


def _error(status: int, message: str) -> Response:
    return Response(
        json.dumps({"error": message, "status": status}),
        status_code=status,
        media_type="application/json",
    )
