"""DataServer replaces the SDK's private resource and prompt handlers of ``MCPServer`` (mcp
is pinned ``>=2.3,<3``): the guard below fails, at once and by name, if an SDK release
moves or renames one, rather than resources quietly being listed from the SDK's static
registry (which holds none) or read without the caller's check."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from mcp.server.mcpserver import Context, MCPServer

from knowhub.interfaces.mcp.dataserver import DataServer
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.tools.base import Target

REPLACED = {
    "resources/list": "_handle_list_resources",
    "resources/templates/list": "_handle_list_resource_templates",
    "resources/read": "_handle_read_resource",
    "prompts/list": "_handle_list_prompts",
    "prompts/get": "_handle_get_prompt",
}


@asynccontextmanager
async def _nothing(ctx: Context) -> AsyncIterator[Target]:
    raise AssertionError("not opened in this test")
    yield  # pragma: no cover


@pytest.mark.parametrize("method", sorted(REPLACED))
def test_the_sdk_still_serves_each_method_through_the_handler_data_server_replaces(
    method: str,
) -> None:
    name = REPLACED[method]
    assert name in vars(MCPServer), f"the SDK renamed or moved {name}"
    ours = inspect.signature(getattr(DataServer, name)).parameters
    theirs = inspect.signature(getattr(MCPServer, name)).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]
    server = DataServer("guard", metrics=Metrics(), resolve=_nothing)
    entry = server._lowlevel_server.get_request_handler(method)
    assert entry is not None, f"the SDK no longer registers a {method} handler"
    assert entry.handler == getattr(server, name)  # bound to ours, not the SDK's own


def test_the_instructions_are_written_in_the_sdks_middleware() -> None:
    server = DataServer("guard", metrics=Metrics(), resolve=_nothing)
    assert server._guide in server._lowlevel_server.middleware
