"""The console's pages under ``/ui``, one module per group: each page checks the caller's
collections, gathers its data off the event loop, and renders a template; a failure is a page
that says what went wrong (:mod:`.failure`, reached through the app's error handlers).

Traces, documents and evaluation reports of collections the caller may not read are never
shown, so a collection-limited token sees the same console as it sees API.
"""

from __future__ import annotations

from fastapi import APIRouter

from knowhub.interfaces.http.console import (
    ask,
    browse,
    evals,
    login,
    manage,
    source,
    sources,
    static,
    traces,
    versions,
)

__all__ = ["console_router"]

_GROUPS = (
    ask.router,
    browse.router,
    source.router,
    manage.router,
    sources.router,
    traces.router,
    evals.router,
    versions.router,
    login.router,
    static.router,
)


def console_router() -> APIRouter:
    """Every page of the console."""
    router = APIRouter()
    for group in _GROUPS:
        router.include_router(group)
    return router
