"""How a console page that failed is shown: a page that says what went wrong, never JSON.

The app's error handlers send every failure under ``/ui`` here. By default that is
``error.html``; a page with a form registers, with :func:`on_failure`, how it is shown again
instead (the search box, the save-case form), keeping what the person typed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from knowhub.errors import KnowhubError, QueryError
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.limits import retry_after
from knowhub.interfaces.http.metrics import ERROR_KEY

__all__ = [
    "NotFoundError",
    "Recover",
    "error_page",
    "failure_body",
    "failure_page",
    "on_failure",
]

log = logging.getLogger("knowhub.http")

RECOVER_KEY = "knowhub.console.recover"
Recover = Callable[[Exception], Awaitable[Response]]
"""Shows a page again after its request failed with the given error."""


class NotFoundError(QueryError):
    """A page's object (trace, chunk) does not exist, or the caller may not read it."""


def on_failure(request: Request, recover: Recover) -> None:
    """Should this request fail, answer with ``recover(error)`` rather than the error page."""
    request.scope[RECOVER_KEY] = recover


async def failure_page(request: Request, exc: Exception) -> Response:
    """The page for a failed console request: its own recovery, else the error page."""
    recover: Recover | None = request.scope.pop(RECOVER_KEY, None)
    if recover is not None:
        try:
            return await recover(exc)
        except Exception as again:  # the form could not be shown again: say why not
            return error_page(request, again)
    return error_page(request, exc)


def failure_body(request: Request, exc: BaseException) -> dict[str, Any]:
    """``{"error", "status"}`` for ``exc`` (404 for :class:`NotFoundError`), noted for the
    metrics; an unexpected error is logged, its text kept out of the page."""
    status = 404 if isinstance(exc, NotFoundError) else None
    if not isinstance(exc, KnowhubError):
        log.error("console page failed", exc_info=exc)
    request.scope[ERROR_KEY] = type(exc).__name__
    return error_body(exc, status)


def error_page(
    request: Request, exc: BaseException, template: str = "error.html", **context: Any
) -> Response:
    """``template`` (the error page by default) showing what went wrong, with its status."""
    body = failure_body(request, exc)
    shown = page(request, template, status=body["status"], error=body["error"], **context)
    if body["status"] == 503:  # busy: when to come back, as the API says it
        shown.headers["Retry-After"] = str(retry_after(exc))
    return shown
