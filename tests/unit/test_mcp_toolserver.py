"""ToolServer, the SDK's MCP server offering each caller only the tools it may call.

It overrides the SDK's private ``MCPServer._handle_list_tools`` (mcp is pinned ``>=2.3,<3``):
the guard below fails, at once and by name, if an SDK release moves or renames it, rather
than every token quietly being offered every tool.
"""

from __future__ import annotations

import inspect

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.tools.base import READ, WRITE, Tool, writers
from knowhub.interfaces.mcp.toolserver import ToolServer

pytestmark = pytest.mark.anyio


def test_the_sdk_still_lists_tools_through_the_method_tool_server_overrides() -> None:
    assert "_handle_list_tools" in vars(MCPServer), "the SDK renamed or moved it"
    ours = inspect.signature(ToolServer._handle_list_tools).parameters
    theirs = inspect.signature(MCPServer._handle_list_tools).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [(p.name, p.kind) for p in theirs.values()]
    server = ToolServer("guard", metrics=Metrics())
    entry = server._lowlevel_server.get_request_handler("tools/list")
    assert entry is not None, "the SDK no longer registers a tools/list handler"
    assert entry.handler == server._handle_list_tools  # bound to ours, not the SDK's own


class _Group:
    """One tool anyone may call, one only writers may."""

    async def echo(self) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ran")])

    def tools(self) -> list[Tool]:
        return [
            Tool(self.echo, "open", "Open", "anyone", READ),
            Tool(self.echo, "write", "Write", "writers only", WRITE, writers("write")),
        ]


async def test_a_call_with_no_caller_known_is_refused_a_tool_that_checks_its_caller() -> None:
    server = ToolServer("guard", metrics=Metrics())
    server.add_groups(_Group())
    assert not (await server.call_tool("open", {})).is_error  # type: ignore[union-attr]
    with pytest.raises(ToolError, match="caller"):
        await server.call_tool("write", {})
