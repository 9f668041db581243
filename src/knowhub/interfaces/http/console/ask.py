"""The Ask page: a conversation over the answers (and chats) of this server, streamed."""

from __future__ import annotations

from knowhub.interfaces.http.console.pages import pages_router

__all__ = ["router"]

router = pages_router()
