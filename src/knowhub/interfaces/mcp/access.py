"""Who is calling: bearer tokens from the configuration and what each may do."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from knowhub.config import Settings
from knowhub.errors import AuthError, ConfigError

__all__ = ["LOCAL_USER", "Principal", "TokenBook"]


@dataclass(frozen=True)
class Principal:
    """A caller and its limits; ``"*"`` in a set allows everything."""

    name: str
    collections: frozenset[str] = frozenset({"*"})
    sessions: frozenset[str] = frozenset({"*"})
    read_only: bool = False

    def may_read(self, collection: str) -> bool:
        return "*" in self.collections or collection in self.collections

    def may_use(self, session_id: str) -> bool:
        return "*" in self.sessions or session_id in self.sessions

    def check_read(self, collection: str) -> None:
        if not self.may_read(collection):
            raise AuthError(f"token {self.name!r} may not read collection {collection!r}")

    def check_write(self, what: str) -> None:
        if self.read_only:
            raise AuthError(f"token {self.name!r} is read-only: it may not {what}")


LOCAL_USER = Principal("local")
"""The caller on stdio or on an HTTP server with no tokens (localhost only)."""


class TokenBook:
    """The configured tokens, compared in constant time."""

    def __init__(self, settings: Settings) -> None:
        self._entries: list[tuple[bytes, Principal]] = []
        for spec in settings.server.tokens:
            secret = settings.secret(spec.token_env)
            if not secret:
                raise ConfigError(
                    f"server.tokens[{spec.name!r}]: environment variable {spec.token_env} is "
                    "not set; export the token there or remove the entry"
                )
            principal = Principal(
                spec.name, frozenset(spec.collections), frozenset(spec.sessions), spec.read_only
            )
            self._entries.append((secret.encode(), principal))

    def __bool__(self) -> bool:
        return bool(self._entries)

    def lookup(self, authorization: str | None) -> Principal | None:
        """The principal for an ``Authorization: Bearer …`` header, or None."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        given = token.strip().encode()
        found = None
        for secret, principal in self._entries:
            # Every entry is compared, so timing tells nothing about which one matched.
            if hmac.compare_digest(secret, given):
                found = principal
        return found
