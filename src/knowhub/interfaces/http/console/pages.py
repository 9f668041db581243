"""What every console page shares: its data gathered off the event loop, and only what the
caller may read (the same collections, traces and reports as the API would show it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.service import Service
from knowhub.trace.record import Trace

__all__ = ["gathered", "pages_router", "readable_names", "readable_traces"]


def pages_router() -> APIRouter:
    """A router for one group of pages under ``/ui`` (kept out of the OpenAPI schema)."""
    return APIRouter(prefix="/ui", include_in_schema=False)


async def gathered(
    request: Request,
    service: Service,
    principal: Caller,
    template: str,
    gather: Callable[[Caller], dict[str, Any]],
) -> Response:
    """``template`` filled with what ``gather(principal)`` returns, run in a worker thread."""
    context = await service.run(lambda: gather(principal))
    return page(request, template, **context)


def readable_names(app: App, principal: Caller) -> list[str]:
    """The names of the collections ``principal`` may read."""
    return [i.name for i in principal.readable(app.collections(), lambda i: i.name)]


def readable_traces(app: App, principal: Caller) -> list[Trace]:
    """The recorded traces of the collections ``principal`` may read, oldest first."""
    return [t for t in app.traces() if principal.may_see(t)]
