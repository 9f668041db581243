"""Conversation memory for ``session_id``: recent turns, per caller, in this process only.

Bounded four ways: the last ``max_turns`` question/answer pairs of a session, at most
``max_sessions`` sessions and ``max_chars`` characters of questions and answers in all
(the least recently used session goes first), and a session idle for ``idle_s`` is
forgotten. Sessions are keyed by the token's name as well as the id, so one
caller can never read another's conversation by guessing its id (an answer may quote a
collection the other may not read). Nothing is written to disk; a restart forgets all.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from knowhub.providers.llms.base import ChatMessage

__all__ = ["Conversations"]


@dataclass
class _Session:
    turns: list[tuple[str, str]] = field(default_factory=list)
    used: float = 0.0

    @property
    def chars(self) -> int:
        return sum(len(q) + len(a) for q, a in self.turns)


class Conversations:
    def __init__(
        self,
        max_turns: int = 10,
        max_sessions: int = 1000,
        idle_s: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        max_chars: int = 4_000_000,  # ≤ 16 MB of str however long the answers are
    ) -> None:
        self.max_turns = max_turns
        self.max_sessions = max_sessions
        self.max_chars = max_chars
        self._chars = 0
        self.idle_s = idle_s
        self._clock = clock
        self._sessions: OrderedDict[tuple[str, str], _Session] = OrderedDict()
        self._lock = threading.Lock()

    def history(self, owner: str, session_id: str) -> list[ChatMessage]:
        """The session's turns as chat messages, oldest first (empty for a new session)."""
        with self._lock:
            self._expire()
            found = self._sessions.get((owner, session_id))
            if found is None:
                return []
            found.used = self._clock()
            self._sessions.move_to_end((owner, session_id))
            turns = list(found.turns)
        return [m for q, a in turns for m in (ChatMessage("user", q), ChatMessage("assistant", a))]

    def record(self, owner: str, session_id: str, question: str, answer: str) -> None:
        """Remember one answered question (keeping only the last ``max_turns``)."""
        with self._lock:
            self._expire()
            key = (owner, session_id)
            found = self._sessions.setdefault(key, _Session())
            self._chars -= found.chars
            found.turns = [*found.turns, (question, answer)][-self.max_turns :]
            found.used = self._clock()
            self._chars += found.chars
            self._sessions.move_to_end(key)
            # The session just recorded stays, even alone over max_chars.
            while len(self._sessions) > 1 and (
                len(self._sessions) > self.max_sessions or self._chars > self.max_chars
            ):
                self._chars -= self._sessions.popitem(last=False)[1].chars

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._sessions)

    def _expire(self) -> None:
        # Least recently used first, so the idle ones are all at the front.
        cutoff = self._clock() - self.idle_s
        while self._sessions:
            key, oldest = next(iter(self._sessions.items()))
            if oldest.used > cutoff:
                break
            del self._sessions[key]
            self._chars -= oldest.chars
