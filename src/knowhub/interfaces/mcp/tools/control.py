"""The control tools of shared mode's ``/mcp``: ``register``, ``unregister`` and ``list``.

A token limited to some sessions, or with a data scope, may not use them (it is not
offered them): each would tell it about (or let it reach) sessions beyond its own, and
``register`` hands out any folder's session id; a read-only token is offered ``list`` only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from knowhub.caller import Caller
from knowhub.interfaces.mcp.shared import SessionRecord, SessionRegistry
from knowhub.interfaces.mcp.tools.base import (
    Refusal,
    Tool,
    in_thread,
    progress_reporter,
    tool_result,
    writers,
)

__all__ = ["ControlTools", "RegisterOut", "SessionOut", "SessionsOut", "UnregisterOut"]


class RegisterOut(BaseModel):
    session_id: str
    path: str
    relative_path: str
    chunks_count: int
    endpoint: str = Field(description="Data-plane URL path for this session's tools.")
    created: bool = Field(False, description="The folder did not exist: created, empty.")


class SessionOut(BaseModel):
    session_id: str
    path: str
    description: str
    state: str = Field(description="Loaded or Unloaded.")
    chunks_count: int | None = Field(
        description="Counted if loaded; if unloaded, as of its unloading (null: not known)."
    )
    last_access: str


class SessionsOut(BaseModel):
    sessions: list[SessionOut]


class UnregisterOut(BaseModel):
    session_id: str
    path: str


@dataclass(frozen=True)
class ControlTools:
    """``register`` and ``unregister`` only when not ``read_only``; ``list`` always."""

    registry: SessionRegistry
    read_only: bool

    def tools(self) -> Iterator[Tool]:
        if not self.read_only:
            yield Tool(
                self.register,
                name="register",
                title="Serve a folder",
                annotations=ToolAnnotations(
                    read_only_hint=False,
                    destructive_hint=False,
                    idempotent_hint=True,
                    open_world_hint=False,
                ),
                description="Register a folder (relative to the server's --path-root) as a "
                "session and index it now, reporting progress. A folder that does not exist is "
                "refused unless create is true. Registering the same folder again returns its "
                "session.",
                refuses=_control_write("register", "register folders"),
            )
            yield Tool(
                self.unregister,
                name="unregister",
                title="Stop serving a folder",
                annotations=ToolAnnotations(
                    read_only_hint=False,
                    destructive_hint=True,
                    idempotent_hint=False,
                    open_world_hint=False,
                ),
                description="Forget a session and its index (the folder itself is kept).",
                refuses=_control_write("unregister", "unregister sessions"),
            )
        yield Tool(
            self.list_sessions,
            name="list",
            title="List sessions",
            annotations=ToolAnnotations(
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
            description="The registered sessions: folder, description, Loaded/Unloaded, "
            "chunks, last access.",
            refuses=_control("list"),
        )

    async def register(
        self,
        path: Annotated[str, Field(min_length=1, description="Relative to --path-root.")],
        ctx: Context,
        description: str = "",
        create: Annotated[
            bool, Field(description="Create the folder, empty, if it does not exist.")
        ] = False,
    ) -> Annotated[CallToolResult, RegisterOut]:
        registry = self.registry
        record, chunks, created = await in_thread(
            lambda: registry.register(
                path, description, progress_reporter(ctx, registry.settings.ingest), create
            )
        )
        out = RegisterOut(
            session_id=record.session_id,
            path=record.path,
            relative_path=record.relative_path,
            chunks_count=chunks,
            endpoint=f"/mcp/{record.session_id}",
            created=created,
        )
        text = (
            f"session {out.session_id} serves {out.path} ({out.chunks_count} chunks); "
            f"its tools are at {out.endpoint}"
        )
        if out.created:
            text += "; the folder did not exist and was created, empty"
        return tool_result(text, out)

    async def unregister(
        self, session_id: Annotated[str, Field(min_length=1)]
    ) -> Annotated[CallToolResult, UnregisterOut]:
        record = await in_thread(lambda: self.registry.unregister(session_id))
        out = UnregisterOut(session_id=record.session_id, path=record.path)
        return tool_result(f"session {out.session_id} ({out.path}) unregistered", out)

    async def list_sessions(self) -> Annotated[CallToolResult, SessionsOut]:
        rows = await in_thread(self.registry.sessions)
        out = SessionsOut(sessions=[_session_out(r, loaded, c) for r, loaded, c in rows])
        lines = [
            f"- {s.session_id} {s.state} {s.path}"
            + (f" — {s.description}" if s.description else "")
            + f" ({_count(s.chunks_count)}, last access {s.last_access})"
            for s in out.sessions
        ]
        return tool_result("\n".join(lines) or "No sessions registered.", out)


def _control(tool: str) -> Refusal:
    """The refusal of a control tool: a caller limited to some collections, to a data scope
    or to sessions."""

    def refuses(principal: Caller) -> str | None:
        if "*" not in principal.collections:
            # A session indexes its folder into the configured collection, whichever that
            # is, and its chunk count and removal concern every collection of its index.
            return (
                f"token {principal.name!r} is limited to collections, so it may not call "
                f"{tool!r}: the control tools (register, unregister, list) need a token with "
                "collections ['*'] in server.tokens"
            )
        if not principal.scope.unrestricted:
            # A session is a whole index: its chunk count, its removal, concern every scope.
            return (
                f"token {principal.name!r} has a data scope, so it may not call {tool!r}: the "
                "control tools (register, unregister, list) need a token without tenants, "
                "datasets, roles or max_visibility limits"
            )
        if principal.session_scoped:
            return (
                f"token {principal.name!r} is limited to sessions, so it may not call {tool!r}: "
                "the control tools (register, unregister, list) need a token with sessions "
                "['*'] in server.tokens; use this one on its sessions' /mcp/<session_id> only"
            )
        return None

    return refuses


def _control_write(tool: str, what: str) -> Refusal:
    """A control tool that changes the sessions: not for a read-only caller either."""
    control, write = _control(tool), writers(what)
    return lambda principal: control(principal) or write(principal)


def _session_out(record: SessionRecord, loaded: bool, chunks: int | None) -> SessionOut:
    return SessionOut(
        session_id=record.session_id,
        path=record.path,
        description=record.description,
        state="Loaded" if loaded else "Unloaded",
        chunks_count=chunks,
        last_access=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.last_access)),
    )


def _count(chunks: int | None) -> str:
    return (
        "chunks not counted yet (counted on its next load)"
        if chunks is None
        else f"{chunks} chunks"
    )
