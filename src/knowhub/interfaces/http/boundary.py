"""The HTTP server's one error boundary: every failure of a request becomes its answer here.

Routes raise; these handlers answer. An API request gets ``{"error", "status"}`` (400 for
invalid input, the status of :func:`~knowhub.interfaces.http.errors.error_status` for
knowhub's errors, 404 for a collection that does not exist, 503 with ``Retry-After`` when
the server is busy, 500 for a bug, whose text stays in the log); a console page gets an
HTML page saying the same (:mod:`knowhub.interfaces.http.console.failure`).

Only two places turn errors into answers themselves, because an answer is under way there and
a status can no longer be sent: a streamed answer's last event (``Service.events``) and the
WebSocket's error events (:mod:`.ws`). Elsewhere an ``except`` is a recovery that belongs to
the page (a chunk re-ingested since, a broken eval report listed, a throttled sign-in).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub.errors import KnowhubError
from knowhub.interfaces.http import console
from knowhub.interfaces.http.deps import service_of
from knowhub.interfaces.http.errors import describe_invalid, error_body
from knowhub.interfaces.http.limits import retry_after
from knowhub.interfaces.http.metrics import ERROR_KEY
from knowhub.interfaces.http.service import COLLECTION_KEY

__all__ = ["add_error_handlers"]


def add_error_handlers(api: FastAPI) -> None:
    """Register the handlers on ``api``, once."""
    api.add_exception_handler(RequestValidationError, _invalid)
    api.add_exception_handler(HTTPException, _http_error)
    api.add_exception_handler(KnowhubError, _failed)
    api.add_middleware(_Unexpected)


class _Unexpected:
    """Answers a bug like knowhub's own errors (500, its text kept in the log).

    A middleware rather than a handler for ``Exception``: Starlette gives that one to its
    outermost middleware, which answers and then raises the error again, so uvicorn would log
    each bug a second time and test clients would raise it. Only HTTP: a WebSocket answers
    its own errors (see ws.py).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:  # too late for an answer: the server ends the response
                raise
            response = await _failed(Request(scope, receive), exc)
            await response(scope, receive, send)


async def _invalid(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    request.scope[ERROR_KEY] = "ValidationError"
    return JSONResponse(error_body(describe_invalid(exc.errors()), 400), status_code=400)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = str(exc.detail)
    if exc.status_code == 413:  # a chunked body that outgrew the limit while arriving
        limit = service_of(request).settings.server.max_body_bytes
        detail = f"request body over {limit} bytes (server.max_body_bytes)"
    body = error_body(detail, exc.status_code)
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def _failed(request: Request, exc: Exception) -> Response:
    """knowhub's errors and bugs alike: the page or the JSON body that says what failed."""
    if console.CONSOLE_LOGIN.covers(request.scope["path"]):
        return await console.failure_page(request, exc)
    body = await service_of(request).failure(exc, request.scope.get(COLLECTION_KEY))
    request.scope[ERROR_KEY] = type(exc).__name__
    retry = {"Retry-After": str(retry_after(exc))} if body["status"] == 503 else None
    return JSONResponse(body, status_code=body["status"], headers=retry)
