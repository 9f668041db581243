"""Managing documents (tokens that may write): upload with progress, delete, re-ingest."""

from __future__ import annotations

from knowhub.interfaces.http.console.pages import pages_router

__all__ = ["router"]

router = pages_router()
