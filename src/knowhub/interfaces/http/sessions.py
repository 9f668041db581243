"""Conversation memory for ``session_id``: recent turns, per caller, kept in the store.

Bounded four ways: the last ``max_turns`` question/answer pairs of a session, at most
``max_sessions`` sessions and ``max_chars`` characters of questions and answers in all
(the least recently used session goes first), and a session idle for ``idle_s`` is
forgotten. Sessions are keyed by the caller's owner (:attr:`~knowhub.caller.Caller.owner`)
as well as the id, so one caller can never read another's conversation by guessing its id
(an answer may quote a collection the other may not read).

The turns live in the store's server state (:mod:`knowhub.providers.stores.state`), so
every replica serving one store continues every conversation; recording a turn is one
atomic update of the session's record, so two replicas answering in one session at once
both keep their turn. Without a store (tests of the parts), this process's memory.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

from knowhub.providers.llms.base import ChatMessage
from knowhub.providers.stores.state import Entry, MemoryState, ServerState

__all__ = ["KIND", "Conversations"]

KIND = "chat-history"

log = logging.getLogger("knowhub.http")


class Conversations:
    def __init__(
        self,
        max_turns: int = 10,
        max_sessions: int = 1000,
        idle_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
        max_chars: int = 4_000_000,  # ≤ 16 MB of str however long the answers are
        state: ServerState | None = None,
    ) -> None:
        self.max_turns = max_turns
        self.max_sessions = max_sessions
        self.max_chars = max_chars
        self.idle_s = idle_s
        self._clock = clock
        self.state: ServerState = state if state is not None else MemoryState()
        # Sessions as of this process's last record: what /health shows, from memory on
        # the event loop, never waiting for the store.
        self.last_count = 0

    def history(self, owner: str, session_id: str) -> list[ChatMessage]:
        """The session's turns as chat messages, oldest first (empty for a new session)."""
        found = self.state.get(KIND, owner, session_id, self._clock(), renew_s=self.idle_s)
        turns: list[list[str]] = json.loads(found) if found else []
        return [m for q, a in turns for m in (ChatMessage("user", q), ChatMessage("assistant", a))]

    def record(self, owner: str, session_id: str, question: str, answer: str) -> None:
        """Remember one answered question (keeping only the last ``max_turns``)."""

        def add(found: str | None) -> Entry:
            turns = [*(json.loads(found) if found else []), [question, answer]]
            kept = turns[-self.max_turns :]
            return Entry(json.dumps(kept), sum(len(q) + len(a) for q, a in kept))

        now = self._clock()
        try:
            self.state.update(KIND, owner, session_id, add, now, self.idle_s)
            # The session just recorded stays, even alone over max_chars.
            self.state.trim(KIND, now, self.max_sessions, self.max_chars)
            self.last_count = self.state.count(KIND, now)
        except Exception:  # the store locked or gone: the answer given is not lost for it
            log.warning("session %s: this turn was not remembered", session_id, exc_info=True)

    def __len__(self) -> int:
        return self.state.count(KIND, self._clock())
