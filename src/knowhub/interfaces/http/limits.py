"""Bounded concurrency for the API: a fixed number of slots and a bounded queue.

Two gates bound the threads the API runs, and with them its memory: ``workers``
(``server.workers``) for searches and other blocking calls, ``answers``
(``server.max_answers``) for answers, each of which streams from a thread of its own. A
request that finds every slot taken waits its turn; when ``server.max_queued`` requests
already wait, it is refused at once with 503 and ``Retry-After`` rather than queued
without bound. Before, searches ran in anyio's default pool (40 threads) and every answer
started a thread of its own, so a burst of 50 clients grew the process by ~40 threads,
each with its own malloc arena.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from knowhub.errors import KnowhubError

__all__ = ["RETRY_AFTER_S", "Gate", "ServerBusyError", "retry_after"]

T = TypeVar("T")

RETRY_AFTER_S = 1
"""What a refused client is told to wait: slots free as fast as requests finish."""


class ServerBusyError(KnowhubError):
    """The server cannot take this now: answered 503 with ``Retry-After: retry_after``."""

    def __init__(self, message: str, retry_after: int = RETRY_AFTER_S) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    @classmethod
    def full(cls, what: str, slots: int, queued: int) -> ServerBusyError:
        """Every slot is taken and the queue is full."""
        return cls(
            f"server busy: all {slots} {what} slots are taken and {queued} requests wait "
            f"(server.max_queued); retry in {RETRY_AFTER_S} s"
        )


def retry_after(exc: BaseException) -> int:
    """The ``Retry-After`` seconds of a 503 for ``exc``."""
    return exc.retry_after if isinstance(exc, ServerBusyError) else RETRY_AFTER_S


class Gate:
    """``slots`` at a time; at most ``queue`` more wait (anyio's CapacityLimiter)."""

    def __init__(self, what: str, slots: int, queue: int) -> None:
        self.what = what
        self.slots = slots
        self.queue = queue
        self._limiter = anyio.CapacityLimiter(slots)

    @property
    def busy(self) -> int:
        """Slots taken now."""
        return int(self._limiter.borrowed_tokens)

    @property
    def waiting(self) -> int:
        return self._limiter.statistics().tasks_waiting

    async def acquire(self) -> Callable[[], None]:
        """Wait for a slot (or raise :class:`ServerBusyError`); returns its release, which
        must be called once, on the event loop."""
        self._check_queue()
        borrower = object()
        await self._limiter.acquire_on_behalf_of(borrower)
        return lambda: self._limiter.release_on_behalf_of(borrower)

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` in a worker thread, holding one slot while it runs."""
        self._check_queue()
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    def _check_queue(self) -> None:
        if self._limiter.available_tokens < 1 and self.waiting >= self.queue:
            raise ServerBusyError.full(self.what, self.slots, self.waiting)
