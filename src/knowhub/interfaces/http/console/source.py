"""A citation's source: the chunk inside its document, a PDF page as an image, the file."""

from __future__ import annotations

from knowhub.interfaces.http.console.pages import pages_router

__all__ = ["router"]

router = pages_router()
