"""The data server: the tools, plus documents as resources, the prompts and instructions
written for the caller.

The SDK's ``MCPServer`` lists and reads the resources registered with it; a knowledge
base's documents come and go, and each caller may read only some of them, so the
handlers of ``resources/list``, ``resources/templates/list`` and ``resources/read`` are
replaced here (as :class:`~knowhub.interfaces.mcp.toolserver.ToolServer` replaces
``tools/list``), each opening the caller's target through the same ``Resolve`` the tools
use (:mod:`knowhub.interfaces.mcp.resources`). The instructions are written per caller
by a server middleware (the SDK passes every request, ``initialize`` and
``server/discover`` included, through its middleware; ``MCPServer`` has one static
``instructions`` string).

When local mode's documents change (an ingest of the served folder: the watcher's, the
``ingest`` tool's; ``KnowledgeBase.on_change``), :meth:`DataServer.documents_changed` tells
the clients: a ``ResourcesListChanged`` event on the subscription bus for the 2026-07-28
clients listening (``subscriptions/listen``), and ``notifications/resources/list_changed``
to a handshake-era client on stdio. Over HTTP an older client cannot be told: the transport
is stateless (no session, no standing stream: knowhub.interfaces.mcp.http), so its
``initialize`` does not announce ``resources.listChanged``. Shared mode's data server,
HTTP-only, tells no one: one bus serves every session, and would tell each session's
listeners of another's changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.from_thread
import anyio.lowlevel
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged
from mcp_types import (
    INVALID_PARAMS,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
)

from knowhub.app import App
from knowhub.errors import KnowhubError
from knowhub.interfaces.mcp import guide, resources
from knowhub.interfaces.mcp.tools.base import Resolve, in_thread
from knowhub.interfaces.mcp.toolserver import ToolServer

__all__ = ["DataServer"]

log = logging.getLogger("knowhub.mcp")

T = TypeVar("T")


class DataServer(ToolServer):
    """A :class:`ToolServer` whose documents are resources of the caller's."""

    def __init__(self, *args: Any, resolve: Resolve, **kwargs: Any) -> None:
        self._bus = InMemorySubscriptionBus()
        super().__init__(*args, instructions=guide.FALLBACK, subscriptions=self._bus, **kwargs)
        self._resolve = resolve
        self._stdio: ServerSession | None = None  # the stdio client, to tell of changes
        self._loop: anyio.lowlevel.EventLoopToken | None = None
        self._instructions_of = guide.Instructions()
        self._lowlevel_server.middleware.append(self._guide)

    async def _as_reader(self, ctx: ServerRequestContext[Any], fn: Callable[[App], T]) -> T:
        """``fn(reader)`` in a worker thread, the reader being the caller's (the tools'
        door: :class:`~knowhub.interfaces.mcp.tools.base.Target`); a failure that names its
        fix is a request error."""
        context = Context(request_context=ctx, mcp_server=self)
        try:
            async with self._resolve(context) as target:
                return await in_thread(lambda: fn(target.reader))
        except (KnowhubError, ToolError) as exc:  # ToolError: refused by the resolve
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        cursor = params.cursor if params is not None else None
        return await self._as_reader(ctx, lambda reader: resources.listed(reader, cursor))

    async def _handle_list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=resources.TEMPLATES)

    async def _handle_read_resource(
        self, ctx: ServerRequestContext[Any], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        uri = str(params.uri)
        contents = await self._as_reader(ctx, lambda reader: resources.read(reader, uri))
        return ReadResourceResult(contents=contents)

    async def _handle_list_prompts(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListPromptsResult:
        return ListPromptsResult(prompts=guide.PROMPTS)

    async def _handle_get_prompt(
        self, ctx: ServerRequestContext[Any], params: GetPromptRequestParams
    ) -> GetPromptResult:
        try:
            return guide.prompt(params.name, params.arguments)
        except ValueError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc

    async def _guide(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """The instructions, written for the caller; and the connection remembered, to be
        told when the documents change."""
        result = await call_next(ctx)
        self._remember(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            result = {**result, "instructions": await self._instructions(ctx)}
        return result

    async def _instructions(self, ctx: ServerRequestContext[Any]) -> str:
        try:
            return await self._as_reader(ctx, self._instructions_of)
        except Exception as exc:  # the handshake must not fail for want of a description
            log.warning("instructions not written (the static ones go out): %s", exc)
            return guide.FALLBACK

    def _remember(self, ctx: ServerRequestContext[Any]) -> None:
        """Keep a stdio client's connection, to tell it of changes. Over HTTP there is none
        to keep: the transport is stateless (an older client has no standing stream; a
        2026-07-28 one listens through the bus)."""
        self._loop = anyio.lowlevel.current_token()
        if ctx.request is None:
            self._stdio = ctx.session

    def documents_changed(self) -> None:
        """Tell the clients that the documents changed (from any thread; a server that has
        not served a request yet has no one to tell)."""
        if self._loop is None:
            return
        try:
            anyio.from_thread.run(self._tell, token=self._loop)
        except RuntimeError as exc:  # the server stopped meanwhile
            log.debug("documents changed after the server stopped: %s", exc)

    async def _tell(self) -> None:
        await self._bus.publish(ResourcesListChanged())
        if self._stdio is not None:  # a 2026-07-28 one drops it: it heard through the bus
            try:
                await self._stdio.send_resource_list_changed()
            except Exception as exc:  # the client left: no one to tell there any more
                log.debug("not told of the change: %s", exc)
                self._stdio = None
