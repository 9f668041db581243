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

__all__ = ["gathered", "names_of", "pages_router"]


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


def names_of(app: App) -> list[str]:
    """The names of the collections ``app``'s caller may read (``App.collections``)."""
    return [i.name for i in app.collections()]
