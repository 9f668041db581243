"""Carry a blocking answer stream from a worker thread to the event loop, event by event.

``Collection.ask`` is a plain iterator that blocks on the model; the pump runs it in its own
thread and hands each event over an anyio memory stream the moment it is made, so tokens
reach the client as they are generated. Closing the pump (the client went away) stops the
producer at its next event and closes the iterator, which closes the model's stream.
``on_exit`` runs on the event loop once the thread is done, which is how the answer slot
it held (:class:`~knowhub.interfaces.http.limits.Gate`) is given back. A pump is noted in
the server's :class:`~knowhub.interfaces.drain.Drain` while it runs: when the server stops
it is interrupted, and its reader gets :class:`~knowhub.interfaces.drain.ShuttingDownError`.
It leaves the drain when closed, or as soon as its producer is done (unless interrupted:
then its reader still has to tell the client): what it made is buffered for the reader,
and a reader may never come (an SSE body never started when the client left first, whose
``finally`` would have closed the pump).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.from_thread
from anyio.lowlevel import EventLoopToken, current_token

from knowhub.interfaces.drain import Drain, ShuttingDownError

__all__ = ["CONTENT_EVENTS", "EventPump"]

log = logging.getLogger("knowhub.http")

Event = tuple[str, dict[str, Any]]
CONTENT_EVENTS = frozenset({"sources", "token", "end"})
"""Events that carry the answer itself; before the first, nothing is committed to a client."""


class EventPump:
    """``events()`` run in a daemon thread; read with :meth:`next` or ``async for``.

    A thread of its own rather than the shared worker pool: an answer may stream for a
    minute, and a few slow models must not starve searches of workers.
    """

    def __init__(
        self,
        events: Callable[[], Iterator[Event]],
        buffer: int = 256,
        on_exit: Callable[[], None] | None = None,
        drain: Drain | None = None,
    ) -> None:
        self._events = events
        self._on_exit = on_exit
        self._drain = drain or Drain()
        self._send, self._receive = anyio.create_memory_object_stream[Event | BaseException](buffer)
        self._stop = threading.Event()
        self._ended = False  # the reader has had the answer's last event
        self._interrupted = False  # the server is stopping: the reader must be told
        self._told = False  # ... and has been
        self._leave: Callable[[], None] = lambda: None

    def start(self) -> EventPump:
        """Start producing; call from the event loop that will read.

        Raises:
            ShuttingDownError: the server is stopping (nothing is started).
        """
        try:
            self._leave = self._drain.enter(self.interrupt)
        except ShuttingDownError:
            self._send.close()  # never to be used: unclosed, they would warn when collected
            self._receive.close()
            raise
        token = current_token()
        threading.Thread(
            target=self._produce, args=(token,), name="knowhub-answer", daemon=True
        ).start()
        return self

    async def next(self) -> Event | None:
        """The next event; None at the end. Re-raises what the producer raised."""
        try:
            item = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._receive.close()
            if self._interrupted and not self._ended and not self._told:
                self._told = True  # said once: the reader's next call ends quietly
                raise ShuttingDownError() from None
            return None
        if isinstance(item, BaseException):
            self._receive.close()  # a failure is always the producer's last word
            raise item
        self._ended = item[0] == "end"  # an answer's and a chat's last event
        return item

    async def until_content(self, kinds: frozenset[str] = CONTENT_EVENTS) -> list[Event]:
        """Events up to and including the first that carries content (one of ``kinds``).

        Errors found before it (a bad collection, a failed search) are raised here, while
        the caller can still answer with an HTTP status instead of a started stream.
        """
        seen: list[Event] = []
        while (event := await self.next()) is not None:
            seen.append(event)
            if event[0] in kinds:
                break
        return seen

    async def __aiter__(self) -> AsyncIterator[Event]:
        while (event := await self.next()) is not None:
            yield event

    def close(self) -> None:
        """Stop the producer (at its next event) and drop what it has not delivered."""
        self._stop.set()
        self._receive.close()
        self._leave()

    def interrupt(self) -> None:
        """End the answer early (the server is stopping; on the event loop): the reader gets
        what was already delivered, then :class:`ShuttingDownError` (unless that held the
        answer's end), without waiting for the producer, which stops at its next event."""
        self._interrupted = True
        self._stop.set()
        self._send.close()

    def _produce(self, token: EventLoopToken) -> None:
        try:
            iterator = self._events()
            try:
                for event in iterator:
                    if self._stop.is_set():
                        return
                    self._deliver(event, token)
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()  # a generator: its own finally blocks close the model's stream
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the reader closed the pump: nobody wants the rest
        except Exception as exc:  # every failure goes to the reader, who decides how to show it
            self._hand_over(exc, token)
        finally:
            self._finish(token)

    def _deliver(self, item: Event | BaseException, token: EventLoopToken) -> None:
        """Hand ``item`` to the reader: with a plain callback while the buffer has room, so
        an event loop that stops in the same instant leaves no coroutine behind (it would
        warn "never awaited" when collected); waiting for room only when the buffer is full."""
        try:
            anyio.from_thread.run_sync(self._send.send_nowait, item, token=token)
        except anyio.WouldBlock:
            anyio.from_thread.run(self._send.send, item, token=token)

    def _hand_over(self, exc: Exception, token: EventLoopToken) -> None:
        try:
            self._deliver(exc, token)
        except Exception:  # reader or event loop gone: the error has nobody to go to
            log.debug("answer failed after its reader left: %s", exc)

    def _finish(self, token: EventLoopToken) -> None:
        def finish() -> None:
            self._send.close()
            if not self._interrupted:  # nothing left to end (the module's docstring)
                self._leave()
            if self._on_exit is not None:
                self._on_exit()

        try:
            anyio.from_thread.run_sync(finish, token=token)
        except Exception:  # the event loop has stopped (server shutting down, test ended)
            # Nobody else can touch the stream now; left open, it would warn when collected.
            self._send.close()
            self._leave()
            log.debug("answer stream closed after the event loop stopped")
