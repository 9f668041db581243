"""How a browser signs in to the console, and why its form posts cannot be forged.

A login form's token opens a server-side session (:class:`~knowhub.interfaces.security.
SessionBook`); only its random id is kept, in an HttpOnly, SameSite=Strict cookie scoped to
``/ui`` (Secure when the request came over TLS: uvicorn takes the scheme from a trusted
proxy's ``X-Forwarded-Proto``): page scripts cannot read it, the browser does not send it
with a request started by another site, and signing out ends the session on the server. The
:class:`~knowhub.interfaces.security.Guard` accepts that cookie under ``/ui`` only
(:data:`CONSOLE_LOGIN`); the API still wants the header.

Cross-site request forgery: besides SameSite=Strict, every console POST must come from a
page of this very server — its ``Origin`` (or, lacking one, ``Sec-Fetch-Site``) must name
this host. That also covers the open console (no tokens configured), where there is no
cookie at all and another page on localhost is allowed by ``server.allowed_origins``.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from knowhub.errors import AuthError, QueryError
from knowhub.interfaces.security import SESSION_TTL_S, CookieLogin

__all__ = [
    "ASK_PAGE",
    "CONSOLE_LOGIN",
    "PUBLIC_PATHS",
    "check_same_origin",
    "clear_login",
    "read_form",
    "remember_login",
    "safe_next",
]

CONSOLE_LOGIN = CookieLogin(prefix="/ui", cookie="knowhub_session", login_path="/ui/login")
PUBLIC_PATHS = frozenset({CONSOLE_LOGIN.login_path})
ASK_PAGE = "/ui/ask"  # where a sign-in without a page to go back to lands
# Where releases before sessions kept the raw token: deleted at the next sign-in.
_TOKEN_COOKIE = "knowhub_token"


def check_same_origin(request: Request) -> None:
    """Refuse a POST that a page of another origin (another site, another port) sent."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is not None:
        if origin != "null" and urlsplit(origin).netloc == host:
            return
        raise AuthError(
            f"form posted from {origin!r}, not from this server ({host}): console forms are "
            "only accepted from the console's own pages"
        )
    if request.headers.get("sec-fetch-site") == "same-origin":
        return
    raise AuthError(
        "form post without an Origin header: console forms are only accepted from the "
        "console's own pages in a browser (programs use the /api endpoints)"
    )


async def read_form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (what the console's forms send)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise QueryError(
            f"expected a form (application/x-www-form-urlencoded), got {kind or 'no body type'!r}"
        )
    body = (await request.body()).decode("utf-8", errors="replace")
    return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a console page of this server, never another site."""
    if (
        target
        and CONSOLE_LOGIN.covers(urlsplit(target).path)
        and not target.startswith("//")
        and "\\" not in target
        and not urlsplit(target).netloc
    ):
        return target
    return ASK_PAGE


def remember_login(response: Response, session_id: str, request: Request) -> None:
    """Set the session cookie (Secure when the request came over TLS)."""
    response.set_cookie(
        CONSOLE_LOGIN.cookie,
        session_id,
        max_age=int(SESSION_TTL_S),
        path=CONSOLE_LOGIN.prefix,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    if _TOKEN_COOKIE in request.cookies:
        response.delete_cookie(_TOKEN_COOKIE, path=CONSOLE_LOGIN.prefix)


def clear_login(response: Response) -> None:
    response.delete_cookie(
        CONSOLE_LOGIN.cookie, path=CONSOLE_LOGIN.prefix, httponly=True, samesite="strict"
    )
