"""The SDK's MCP server, answering each caller with the tools it may call.

``tools/list`` offers a caller (a token over HTTP; the local user on stdio) only the tools
it may call: a read-only token no ``ingest`` (nor shared mode's ``register`` and
``unregister``), a token limited to sessions or with a data scope none of shared mode's
control tools. Calling a tool one is not offered is a tool error saying why: the same
check, made once here, before any tool runs, and counted as the ``refused`` outcome of
``knowhub_tool_calls_total``. Arguments that fail validation are told plainly
(:func:`invalid_arguments`).

The per-caller list overrides the SDK's private ``MCPServer._handle_list_tools`` (the SDK
offers no stable hook; its middleware is provisional): tests/unit/test_mcp_toolserver.py
fails if an SDK release moves it.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, ListToolsResult, PaginatedRequestParams
from pydantic import ValidationError

from knowhub.caller import LOCAL_USER, Caller
from knowhub.checks import unpaired_surrogate
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.tools.base import Refusal, Tool, ToolGroup, anyone, wrapped
from knowhub.interfaces.security import PRINCIPAL_KEY

__all__ = ["ToolServer", "invalid_arguments", "principal_of"]


def principal_of(ctx: Context) -> Caller:
    """The caller set by :class:`~knowhub.interfaces.security.Guard`; on stdio, the local
    user."""
    return _caller(ctx.request_context.request)


def _caller(request: object) -> Caller:
    scope = getattr(request, "scope", None)
    if scope is None:
        return LOCAL_USER
    principal: Caller | None = scope.get(PRINCIPAL_KEY)
    if principal is None:  # only /health lets one through, and it calls no tool
        raise ToolError("unauthenticated")
    return principal


class ToolServer(MCPServer):
    """The SDK's server, with tools offered per caller and arguments that fail validation
    told plainly.

    The SDK passes pydantic's text on: ``[type=…, input_value=…]`` and "For further
    information visit https://errors.pydantic.dev/…" for every field, noise in the
    agent's context that teaches it nothing about the fix.
    """

    def __init__(self, *args: Any, metrics: Metrics, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refusals: dict[str, Refusal] = {}
        self._metrics = metrics

    def add_groups(self, *groups: ToolGroup) -> None:
        """Register every tool of ``groups``, in order, with the SDK's ``add_tool`` through
        the one wrapper (:func:`~knowhub.interfaces.mcp.tools.base.wrapped`), and who may
        not call it."""
        for group in groups:
            for tool in group.tools():
                self._add(tool)

    def _add(self, tool: Tool) -> None:
        self.add_tool(
            wrapped(tool, self._metrics),
            name=tool.name,
            title=tool.title,
            description=tool.description,
            annotations=tool.annotations,
        )
        self._refusals[tool.name] = tool.refuses

    def refusal(self, tool: str, principal: Caller) -> str | None:
        """Why ``principal`` may not call ``tool``; None when it may (or no such tool)."""
        refuses = self._refusals.get(tool)
        return None if refuses is None else refuses(principal)

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        listed = await super()._handle_list_tools(ctx, params)
        principal = _caller(ctx.request)
        offered = [t for t in listed.tools if self.refusal(t.name, principal) is None]
        return listed.model_copy(update={"tools": offered})

    def _refused(self, tool: str, context: Context[Any, Any] | None) -> str | None:
        """Why the caller of ``context`` may not call ``tool``; a tool that checks its caller
        is refused when there is none to check (a call from outside a request)."""
        if self._refusals.get(tool, anyone) is anyone:
            return None
        if context is None:
            return f"{tool} checks its caller, and this call has none: call it in a request"
        return self.refusal(tool, principal_of(context))

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if refused := self._refused(name, context):
            self._metrics.tool_calls.labels(name, "refused").inc()
            raise ToolError(refused)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            # From the cause, as the SDK's own: its log line names the rejected fields.
            raise ToolError(f"Error executing tool {name}: {invalid_arguments(cause)}") from cause


def invalid_arguments(error: ValidationError) -> str:
    """Each rejected argument as "name: what is wrong (given value)", without the URLs."""
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        # pydantic-core cannot read a lone surrogate ("unable to parse raw data as a unicode
        # string") and refuses it before the tool's own check: say it as that check does.
        surrogate = (
            unpaired_surrogate(item["input"], where) if item["type"] == "string_unicode" else None
        )
        given = "" if item["type"] == "missing" else f" (given {_shorten(item['input'])})"
        problems.append(surrogate or f"{where}: {item['msg']}{given}")
    count = len(problems)
    return f"{count} invalid argument{'s' if count > 1 else ''}: " + "; ".join(problems)


def _shorten(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
