"""Ending the answers in flight when a server stops: a bounded grace, then an error each.

On SIGTERM uvicorn stops accepting connections and waits for the open ones to end: an answer
streaming from a slow model held it for minutes, until the process manager's SIGKILL cut
the client's body with no word of why. A server's :class:`Drain` knows every answer in
flight (the HTTP API's answers and chats, streamed over SSE, a WebSocket or not at all; the
MCP server's ``ask`` calls). When the server stops it refuses new answers, gives those in
flight ``server.shutdown_grace_s`` to end, then ends each with :class:`ShuttingDownError`: a
stream's last event is an ``error`` (503) saying so, an MCP call's result a tool error.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import anyio

from knowhub.errors import KnowhubError

__all__ = ["Drain", "ShuttingDownError"]

log = logging.getLogger("knowhub.server")
T = TypeVar("T")

TELL_S = 2.0
"""How long answers ended early get to send their error event: a pump's reader ends at
once, an MCP call at its model's next token."""
_POLL_S = 0.05


class ShuttingDownError(KnowhubError):
    """The server is stopping: no answer starts, and those in flight end with this."""

    def __init__(self) -> None:
        super().__init__("the server is shutting down: ask again once it is back")


class Drain:
    """The answers in flight on one server, and whether they must end now.

    ``enter`` and the leave it returns may be called from any thread; :meth:`end` runs on
    the server's event loop, and so do the interrupts it calls.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, Callable[[], None]] = {}
        self._keys = itertools.count()
        self._draining = False

    def enter(self, interrupt: Callable[[], None]) -> Callable[[], None]:
        """Note an answer in flight, which ``interrupt()`` ends early; returns the call that
        notes its end (once its client has been told).

        Raises:
            ShuttingDownError: the server is stopping, so no answer starts.
        """
        with self._lock:
            if self._draining:
                raise ShuttingDownError()
            key = next(self._keys)
            self._live[key] = interrupt
        return lambda: self._leave(key)

    def watch(self, events: Iterator[T]) -> Iterator[T]:
        """``events`` (read in a worker thread), noted as an answer in flight: once answers
        must end, the next event raises :class:`ShuttingDownError` instead (and ``events`` is
        closed, which closes the model's stream)."""
        ended = threading.Event()
        leave = self.enter(ended.set)
        try:
            for event in events:
                if ended.is_set():
                    raise ShuttingDownError()
                yield event
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
            leave()

    async def end(self, grace_s: float, hurry: Callable[[], bool] = lambda: False) -> None:
        """Refuse new answers; give those in flight ``grace_s`` to end, then end them and
        wait (:data:`TELL_S` at most) while they tell their clients. ``hurry()`` true (a
        second Ctrl-C) cuts both waits short."""
        with self._lock:
            self._draining = True
            waiting = len(self._live)
        if waiting:
            log.warning(
                "stopping: %d answer(s) in flight get %g s to end (server.shutdown_grace_s)",
                waiting,
                grace_s,
            )
        if await self._idle_within(grace_s, hurry):
            return
        with self._lock:
            interrupts = list(self._live.values())
        log.warning(
            "%d answer(s) still running after %g s: ending them with an error event",
            len(interrupts),
            grace_s,
        )
        for interrupt in interrupts:
            interrupt()
        if not await self._idle_within(TELL_S, hurry):
            log.warning(
                "%d answer(s) did not end in %g s: their connections are cut",
                len(self._live),
                TELL_S,
            )

    def _leave(self, key: int) -> None:
        with self._lock:
            self._live.pop(key, None)

    async def _idle_within(self, seconds: float, hurry: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + seconds
        while self._live:
            if hurry() or time.monotonic() >= deadline:
                return False
            await anyio.sleep(_POLL_S)  # answers end in threads: nothing to await but time
        return True
