"""Signing in to the console and out of it (see :mod:`.auth` for the cookie and the checks).

``tokens`` is the guard's own book, so wrong logins and wrong bearer tokens count against one
limit per client address.
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from knowhub.interfaces.http.console.auth import (
    CONSOLE_LOGIN,
    check_same_origin,
    clear_login,
    read_form,
    remember_login,
    safe_next,
)
from knowhub.interfaces.http.console.pages import pages_router
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.deps import TokensDep
from knowhub.interfaces.http.metrics import ERROR_KEY
from knowhub.interfaces.security import ThrottledError, client_address

__all__ = ["login", "login_form", "logout", "router"]

WRONG_TOKEN = "wrong token: give one of the tokens configured in server.tokens"

router = pages_router()


@router.get("/login")
async def login_form(request: Request, tokens: TokensDep, next: str = "") -> Response:
    return page(request, "login.html", next=safe_next(next), error=None, open_console=not tokens)


@router.post("/login")
async def login(request: Request, tokens: TokensDep) -> Response:
    check_same_origin(request)
    form = await read_form(request)
    target = safe_next(form.get("next"))
    token = form.get("token", "").strip()
    if not tokens:
        return RedirectResponse(target, 303)
    try:
        found = tokens.authenticate(
            f"Bearer {token}", client_address(request.scope), request.url.path
        )
    except ThrottledError as exc:  # the sign-in form again, not the error page: retry there
        refused = _refused(request, target, 429, str(exc))
        refused.headers["Retry-After"] = str(exc.retry_after)
        return refused
    if found is None:
        return _refused(request, target, 401, WRONG_TOKEN)
    response = RedirectResponse(target, 303)
    # The store's write in a worker thread, as every sign-in's read (security.Guard).
    remember_login(response, await anyio.to_thread.run_sync(tokens.sessions.open, found), request)
    return response


@router.post("/logout")
async def logout(request: Request, tokens: TokensDep) -> Response:
    check_same_origin(request)
    await anyio.to_thread.run_sync(tokens.sessions.close, request.cookies.get(CONSOLE_LOGIN.cookie))
    response = RedirectResponse("/ui/login", 303)
    clear_login(response)
    return response


def _refused(request: Request, target: str, status: int, error: str) -> Response:
    """The sign-in form again, saying why; the metrics count it by its status."""
    request.scope[ERROR_KEY] = str(status)
    return page(request, "login.html", status=status, next=target, open_console=False, error=error)
