"""Who is calling, and what it may read and change: decided here, once, for every interface.

A :class:`Caller` is what a token of ``server.tokens`` grants (or, for the owner of the data
directory — stdio, the CLI, an HTTP server without tokens — everything): the collections it
may read, whether it may change them, the data scope it sees inside them
(:mod:`knowhub.scope`), the shared-mode sessions and the chat's MCP servers it may use.
The App applies it below the interfaces (``App.for_caller``): a collection the caller may
not read is refused with one message, and left out of listings and chunk look-ups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from knowhub.config import TokenSettings
from knowhub.errors import AuthError
from knowhub.scope import UNRESTRICTED, token_scope
from knowhub.scope import Scope as DataScope
from knowhub.trace.record import Trace

__all__ = ["LOCAL_USER", "Caller"]

T = TypeVar("T")


@dataclass(frozen=True)
class Caller:
    """A caller and its limits; ``"*"`` in a set allows everything."""

    name: str
    collections: frozenset[str] = frozenset({"*"})
    sessions: frozenset[str] = frozenset({"*"})
    read_only: bool = False
    mcp_servers: frozenset[str] = frozenset({"*"})
    scope: DataScope = UNRESTRICTED  # the documents it sees inside what it may read
    # Which configured token this is (a slow digest of its secret, set by the token book):
    # what records in the store (console sign-ins, upload jobs) name their token by, so
    # that every replica tells apart two tokens granting the same. "" for no token.
    token_id: str = field(default="", compare=False, repr=False)

    @classmethod
    def of_token(cls, spec: TokenSettings) -> Caller:
        """What the configured token ``spec`` grants."""
        return cls(
            spec.name,
            frozenset(spec.collections),
            frozenset(spec.sessions),
            spec.read_only,
            frozenset(_servers_of(spec)),
            token_scope(spec),
        )

    @property
    def owner(self) -> str:
        """Who a conversation belongs to: the name and what it may see (two tokens of one
        name, as while rotating a secret, share their conversations only if they see alike:
        a narrow one never reads answers built from what only a wide one sees, nor chat
        turns built from MCP servers it may not call)."""
        collections = ",".join(sorted(self.collections))
        servers = ",".join(sorted(self.mcp_servers))
        return f"{self.name}|{collections}|{self.scope.digest()}|{servers}"

    def may_read(self, collection: str) -> bool:
        return "*" in self.collections or collection in self.collections

    def readable(self, items: Iterable[T], collection: Callable[[T], str]) -> list[T]:
        """The ``items`` (collections, hits, traces, …) whose ``collection`` this caller may
        read: every listing of every server filters through here."""
        return [item for item in items if self.may_read(collection(item))]

    def may_see(self, trace: Trace) -> bool:
        """Whether this caller may read ``trace``: its collection, for a chat every
        collection its results came from and every MCP server it called, and the data scope
        it ran under (a run's query and sources are of what its caller saw)."""
        return (
            all(map(self.may_read, [trace.collection, *trace.reads]))
            and all(map(self.may_chat_with, trace.servers))
            and self.may_see_scope(trace.scope)
        )

    def may_see_scope(self, recorded: Mapping[str, Any] | None) -> bool:
        """Whether a run recorded under the data scope ``recorded`` (``Scope.to_dict``) is
        within this caller's; a run with none recorded (an ingest, a trace from before
        scopes) counts as unrestricted, so only an unrestricted caller sees it."""
        if self.scope.unrestricted:
            return True
        return recorded is not None and self.scope.covers(DataScope.from_dict(recorded))

    def may_chat_with(self, server: str) -> bool:
        """Whether this caller's chats may use the MCP server ``server`` of agent.mcp_config."""
        return "*" in self.mcp_servers or server in self.mcp_servers

    def may_use(self, session_id: str) -> bool:
        return "*" in self.sessions or session_id in self.sessions

    @property
    def unlimited(self) -> bool:
        """Limited in nothing it may read: every collection, every session, no data scope
        (a server's /health tells such a caller everything)."""
        return "*" in self.collections and not self.session_scoped and self.scope.unrestricted

    @property
    def session_scoped(self) -> bool:
        """Limited to some shared-mode sessions, so kept off the control tools."""
        return "*" not in self.sessions

    def check_read(self, collection: str) -> None:
        if not self.may_read(collection):
            raise AuthError(f"token {self.name!r} may not read collection {collection!r}")

    def write_refusal(self, what: str) -> str | None:
        """Why this caller may not ``what`` (change the knowledge base); None: it may."""
        return f"token {self.name!r} is read-only: it may not {what}" if self.read_only else None

    def check_write(self, what: str) -> None:
        if (why := self.write_refusal(what)) is not None:
            raise AuthError(why)

    def check_reach(self, spec: str, local_reach: bool) -> None:
        """A source fetched with the server's own reach (a git repository: the server's
        files, its SSH keys, any address) is ingested only for a caller limited in nothing:
        it would let a token that may write one collection read what the server can."""
        if local_reach and not self.unlimited:
            raise AuthError(
                f"token {self.name!r} may not ingest {spec}: a repository is fetched with the "
                "server's own access; list it under sources: in knowhub.yaml, or use a token "
                "limited in nothing"
            )


LOCAL_USER = Caller("local")
"""The caller on stdio or on an HTTP server with no tokens (localhost only)."""


def _servers_of(spec: TokenSettings) -> list[str]:
    """The MCP servers a token's chats may use: as configured; unset, all for a token that
    reads every collection and none for a limited one (a filesystem or another knowhub's
    server would reach past its collections)."""
    if spec.mcp_servers is not None:
        return spec.mcp_servers
    return ["*"] if "*" in spec.collections else []
