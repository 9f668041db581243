"""Who is calling, and the checks every HTTP request passes (MCP server and HTTP API).

Bearer tokens come from the configuration (secrets from the environment); :class:`Guard`
is the ASGI middleware in front of every route: Origin allow-list, Host check when bound
to loopback (DNS rebinding), body size limit, bearer token (or, for browser pages under a
:class:`CookieLogin` prefix only, a :class:`SessionBook` session id in a cookie). Wrong tokens
are counted per client address (:class:`FailureLimiter`): too many and that address gets 429
for a while.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import quote

import anyio.to_thread
from starlette.datastructures import Headers, QueryParams
from starlette.requests import cookie_parser
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub.caller import LOCAL_USER, Caller
from knowhub.config import Settings, secret_unset
from knowhub.errors import AuthError, ConfigError
from knowhub.providers.stores.state import Entry, MemoryState, ServerState

__all__ = [
    "LOOPBACK_HOSTS",
    "PRINCIPAL_KEY",
    "SESSION_TTL_S",
    "CookieLogin",
    "FailureLimiter",
    "Guard",
    "SessionBook",
    "ThrottledError",
    "TokenBook",
    "check_bind",
    "client_address",
]

log = logging.getLogger("knowhub.security")

PRINCIPAL_KEY = "knowhub.principal"
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
SESSION_TTL_S = 7 * 86400.0  # a console sign-in lasts a week, however much it is used
MAX_SESSIONS = 10_000  # console sign-ins remembered; the oldest is forgotten first
_SIGN_INS = "console-sign-in"  # their kind of server state
_TOKEN_ID_ROUNDS = 50_000  # ~20 ms a token, once at the start


class ThrottledError(AuthError):
    """A client address sent too many wrong tokens: it is refused (429) for ``retry_after`` s."""

    def __init__(self, client: str, retry_after: int) -> None:
        super().__init__(
            f"too many failed authentications from {client}: try again in {retry_after} s"
        )
        self.retry_after = retry_after


@dataclass
class _Failures:
    # (when, which credential's digest), within the window, oldest first
    times: deque[tuple[float, bytes | None]] = field(default_factory=deque)
    locked_until: float = 0.0


class FailureLimiter:
    """Failed authentications per client address, in a table bounded by count.

    An address with ``limit`` failures within ``window_s`` is locked out for ``lockout_s``.
    The same wrong credential again within the window is not counted again: a browser with
    a stale cookie or a client with an old token retries one value, which guesses nothing,
    and must not lock out the person who then types the right one. Successes are never
    counted, and do not clear earlier failures (or one valid token would
    let its holder guess the others unthrottled). At most ``max_clients`` addresses are
    remembered: the one that failed least recently is forgotten first, so memory stays
    bounded however many addresses an attacker uses.
    """

    def __init__(
        self,
        limit: int,
        window_s: float,
        lockout_s: float,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self.lockout_s = lockout_s
        self.max_clients = max_clients
        self._clock = clock
        self._clients: OrderedDict[str, _Failures] = OrderedDict()
        self._lock = threading.Lock()  # console routes and the guard may run on other threads

    def __len__(self) -> int:
        return len(self._clients)

    def locked(self, client: str) -> int | None:
        """Whole seconds until ``client`` may try again, or None if it may now."""
        with self._lock:
            entry = self._clients.get(client)
            left = entry.locked_until - self._clock() if entry else 0.0
        return max(1, math.ceil(left)) if left > 0 else None

    def failed(self, client: str, credential: bytes | None = None) -> bool:
        """Count one failure of ``client`` with ``credential`` (a digest; None: always
        counted); True when this one locks it out."""
        now = self._clock()
        with self._lock:
            entry = self._clients.pop(client, None) or _Failures()
            self._clients[client] = entry  # now the most recent
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
            while entry.times and entry.times[0][0] <= now - self.window_s:
                entry.times.popleft()
            if credential is not None and any(c == credential for _, c in entry.times):
                return False
            entry.times.append((now, credential))
            if len(entry.times) < self.limit:
                return False
            entry.times.clear()
            entry.locked_until = now + self.lockout_s
            return True


class SessionBook:
    """Console sign-ins: a random session id for each, standing for the principal.

    The browser's cookie holds this id, never the bearer token: a copied cookie is worth
    nothing after sign-out or after :data:`SESSION_TTL_S`, and the token itself is never
    stored in a browser profile. Ids are 256 random bits, kept only as SHA-256 digests; at
    most ``max_sessions`` are kept, the oldest sign-in forgotten first (its browser is sent
    to the login form again).

    Sign-ins live in the server state (:mod:`knowhub.providers.stores.state`; this process's
    memory until :meth:`share` gives the store's), so a browser signed in on one replica is
    signed in on every replica of the store. A record holds the id's digest and the token's
    :attr:`~knowhub.caller.Caller.token_id` (a slow digest of it), never a token:
    ``resolve`` finds that token's principal, as configured now (a token since removed ends
    its sign-ins).
    """

    def __init__(
        self,
        resolve: Callable[[str], Caller | None],
        ttl_s: float = SESSION_TTL_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.resolve = resolve
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self._clock = clock
        self.state: ServerState = MemoryState()

    def share(self, state: ServerState) -> None:
        """Keep sign-ins in ``state`` (the store's) from now on."""
        self.state = state

    def __len__(self) -> int:
        return self.state.count(_SIGN_INS, self._clock())

    def open(self, principal: Caller) -> str:
        """A new session for ``principal``: the id to put in the cookie."""
        session_id = secrets.token_urlsafe(32)
        now, token = self._clock(), principal.token_id
        self.state.update(
            _SIGN_INS, "", _key(session_id), lambda _: Entry(token, 1), now, self.ttl_s
        )
        self.state.trim(_SIGN_INS, now, self.max_sessions)
        return session_id

    def lookup(self, session_id: str | None) -> Caller | None:
        """The principal of a live session, or None (unknown, ended or expired)."""
        if not session_id:
            return None
        found = self.state.get(_SIGN_INS, "", _key(session_id), self._clock())
        return None if found is None else self.resolve(found)

    def close(self, session_id: str | None) -> None:
        """End the session (sign-out); an unknown id is ignored."""
        if session_id:
            self.state.delete(_SIGN_INS, "", _key(session_id))


class TokenBook:
    """The configured tokens, compared in constant time; wrong ones counted per client.

    Secrets are kept and compared as SHA-256 digests: equal lengths, so the comparison's
    time tells nothing about a secret's length either.
    """

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        server = settings.server
        self.failures = FailureLimiter(
            server.auth_max_failures,
            server.auth_window_s,
            server.auth_lockout_s,
            server.auth_tracked_clients,
            clock,
        )
        self._entries: list[tuple[bytes, Caller]] = []
        self._principals: dict[str, Caller] = {}  # by token_id
        self.sessions = SessionBook(self._principals.get)  # console sign-ins with these tokens
        for spec in settings.server.tokens:
            secret = settings.secret(spec.token_env)
            if not secret:
                unset = secret_unset(
                    f"server.tokens[{spec.name!r}].token_env", spec.token_env, "the token"
                )
                raise ConfigError(f"{unset}, or remove the entry")
            principal = replace(Caller.of_token(spec), token_id=_token_id(secret))
            self._entries.append((_digest(secret.encode()), principal))
            self._principals[principal.token_id] = principal

    def __bool__(self) -> bool:
        return bool(self._entries)

    def lookup(self, authorization: str | None) -> Caller | None:
        """The principal for an ``Authorization: Bearer …`` header, or None."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = _digest(token.strip().encode())
        found = None
        for secret, principal in self._entries:
            # Every entry is compared, so timing tells nothing about which one matched.
            if hmac.compare_digest(secret, given):
                found = principal
        return found

    def authenticate(self, authorization: str | None, client: str, path: str) -> Caller | None:
        """:meth:`lookup`, counting and logging wrong credentials per ``client`` address.

        None when no credential was sent (nothing guessed, nothing counted) or a wrong one.
        Raises :class:`ThrottledError` while ``client`` is locked out — for any credential, the
        right one too: were it let through, guessing would go on at full speed.
        """
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() in ("", "bearer") and not token.strip():
            return None
        wait = self.failures.locked(client)
        if wait is not None:
            raise ThrottledError(client, wait)
        found = self.lookup(authorization)
        if found is None:
            # Never the credential itself; %r keeps a path's control characters on one line.
            log.warning("authentication failed: wrong token from %s for %r", client, path)
            if self.failures.failed(client, _digest(token.strip().encode())):
                log.warning(
                    "%s locked out for %g s: %d failed authentications within %g s",
                    client,
                    self.failures.lockout_s,
                    self.failures.limit,
                    self.failures.window_s,
                )
        return found


@dataclass(frozen=True)
class CookieLogin:
    """Browser pages under ``prefix`` (the web console) may carry a session in a cookie.

    A browser cannot add an ``Authorization`` header to a link it follows, so there, and only
    there, the ``cookie`` a login form set may stand in for the token: it holds a
    :class:`SessionBook` id (HttpOnly, SameSite=Strict: another site's page cannot make the
    browser send it). A page asked for without a valid token or session is redirected to
    ``login_path``.
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
        large_body_paths: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.origins = origins
        self.hosts = hosts
        self.max_body_bytes = max_body_bytes
        self.public_paths = public_paths
        self.cookie_login = cookie_login
        self.large_body_paths = large_body_paths  # uploads: their route holds them to a limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # WebSocket handshakes get the same checks (a browser sends Origin on them too).
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin and not _matches(origin, self.origins):
            await _refuse(
                _error(403, f"origin {origin!r} is not allowed: add it to server.allowed_origins"),
                scope,
                receive,
                send,
            )
            return
        host = headers.get("host", "")
        if self.hosts is not None and not _matches(host, self.hosts):
            await _refuse(_error(421, f"host {host!r} is not this server"), scope, receive, send)
            return
        length = headers.get("content-length")
        big = scope["path"] in self.large_body_paths
        if length and length.isdigit() and int(length) > self.max_body_bytes and not big:
            await _error(413, f"request body over {self.max_body_bytes} bytes")(
                scope, receive, send
            )
            return
        principal: Caller | None = LOCAL_USER
        if self.tokens:
            try:
                principal = await self._principal(scope, headers)
            except ThrottledError as exc:
                await _refuse(_throttled(exc), scope, receive, send)
                return
            if principal is None and scope["path"] not in self.public_paths:
                await _refuse(self._unauthenticated(scope), scope, receive, send)
                return
        scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)

    async def _principal(self, scope: Scope, headers: Headers) -> Caller | None:
        """The caller by its token or, on a console page sent none, by its session cookie
        (looked up in the store from a worker thread: a slow database holds that request
        only, never the event loop).

        A wrong session id is not counted as a failed authentication: 256 random bits cannot
        be guessed, and a stale cookie after sign-out or a restart guesses nothing.
        """
        authorization = _authorization(scope, headers)
        login = self.cookie_login
        if (
            authorization is None
            and login is not None
            and scope["type"] == "http"
            and login.covers(scope["path"])
        ):
            session = cookie_parser(headers.get("cookie", "")).get(login.cookie)
            if not session:
                return None
            return await anyio.to_thread.run_sync(self.tokens.sessions.lookup, session)
        return self.tokens.authenticate(authorization, client_address(scope), scope["path"])

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
        response = _error(
            401, "missing or invalid bearer token: send 'Authorization: Bearer <token>'"
        )
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


def client_address(scope: Scope) -> str:
    """The client's IP address, what failures are counted by (``unknown`` if the server has
    none): the peer's, or the one a proxy of ``server.trusted_proxies`` forwarded for (the
    servers' uvicorn rewrites ``client`` from ``X-Forwarded-For`` for those peers only,
    :mod:`knowhub.interfaces.serving`). Any client could write another address there.
    """
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _throttled(exc: ThrottledError) -> Response:
    """429 with ``Retry-After``, in the JSON shape of every other refusal."""
    response = _error(429, str(exc))
    response.headers["Retry-After"] = str(exc.retry_after)
    return response


def _digest(secret: bytes) -> bytes:
    return hashlib.sha256(secret).digest()


def _token_id(secret: str) -> str:
    """What the store names a token by: the same on every replica, and slow to test a
    guessed token against (PBKDF2), though the store holds no token (a low-entropy one
    included) in a form quicker to guess from than the token's own check."""
    derived = hashlib.pbkdf2_hmac("sha256", secret.encode(), b"knowhub token id", _TOKEN_ID_ROUNDS)
    return derived.hex()[:32]


def _key(session_id: str) -> str:
    """What a sign-in is stored under: its id's digest, so the store holds no live id."""
    return _digest(session_id.encode()).hex()


def _matches(value: str, allowed: list[str]) -> bool:
    for pattern in allowed:
        if value == pattern:
            return True
        port = value[len(pattern) - 1 :]
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and port.isdigit():
            return True
    return False


def _authorization(scope: Scope, headers: Headers) -> str | None:
    """The Authorization header; on a WebSocket handshake without one, ``?token=``.

    Browsers cannot set headers on a WebSocket, so only there may the token ride in the
    URL (compared exactly like the header's).
    """
    found = headers.get("authorization")
    if found is None and scope["type"] == "websocket":
        token = QueryParams(scope.get("query_string", b"")).get("token")
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
