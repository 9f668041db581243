"""The HTTP server's chats, in pieces: no MCP server starts once the server stops."""

from __future__ import annotations

from typing import cast

import pytest

from knowhub.errors import KnowhubError
from knowhub.interfaces.http.chats import Chats
from knowhub.interfaces.http.service import Service


def test_no_chat_starts_the_servers_again_after_close() -> None:
    chats = Chats(cast(Service, None))  # close() and a refused agent() need no service
    chats.close()
    with pytest.raises(KnowhubError, match="shutting down"):
        chats.agent()
