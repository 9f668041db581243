"""One answer or chat as every HTTP route runs it: ``/api/ask``, ``/api/chat``, the
WebSocket, the console's ask page and its stream.

Its events are produced in a worker thread that holds one of ``server.max_answers`` slots
until they end (:class:`~knowhub.interfaces.http.pump.EventPump`); a route takes them whole
(:meth:`Streamed.answer`, the ``end`` payload) or as a stream (:meth:`Streamed.begin`, then
:meth:`Streamed.events`), which is held back until the first content so that a bad request
still gets its status. What a finished one leaves (metrics, the session's memory) is told
once, to ``ended``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from knowhub.interfaces.http.pump import CONTENT_EVENTS, EventPump
from knowhub.interfaces.wire import failed

if TYPE_CHECKING:
    from knowhub.interfaces.http.service import Event, Service

__all__ = ["SSE_HEADERS", "PumpedResponse", "Streamed"]

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass(frozen=True)
class Streamed:
    """The events ``produce()`` makes, for ``route`` on ``collection``."""

    service: Service
    produce: Callable[[], Iterator[Event]]
    ended: Callable[[dict[str, Any]], None]  # the ``end`` payload, once
    route: str  # the error metric's label
    collection: str  # a failure for want of it is a 404 naming it
    content: frozenset[str] = CONTENT_EVENTS  # the events a stream is held back for

    async def pump(self) -> EventPump:
        """The events, produced in a thread holding an answer slot until they end
        (ServerBusyError when the queue for the slots is full)."""
        release = await self.service.answers.acquire()
        try:
            return EventPump(self.produce, on_exit=release, drain=self.service.drain).start()
        except BaseException:
            release()
            raise

    async def answer(self) -> dict[str, Any]:
        """The whole of it (the ``end`` payload); errors are raised. Produced like a
        stream, so that a slow model holds an answer slot, never a search worker."""
        pump = await self.pump()
        try:
            async for kind, payload in pump:
                if kind == "end":
                    await self._ended(payload)
                    return payload
        finally:
            pump.close()
        raise RuntimeError(f"{self.route} ended without an 'end' event")

    async def begin(self) -> tuple[list[Event], EventPump]:
        """The events up to the first content, and the pump for the rest (closed when
        that fails, so that the failure is the request's status)."""
        pump = await self.pump()
        try:
            return await pump.until_content(self.content), pump
        except BaseException:
            pump.close()
            raise

    async def events(self, first: list[Event], pump: EventPump) -> AsyncGenerator[Event, None]:
        """The events from ``first`` on; a failure becomes one last ``error`` event (the
        status is sent: the stream's last event is all that is left)."""
        try:
            for kind, payload in first:
                yield await self._seen(kind, payload)
            async for kind, payload in pump:
                yield await self._seen(kind, payload)
        except Exception as exc:
            self.service.metrics.errors.labels(self.route, type(exc).__name__).inc()
            yield failed(await self.service.failure(exc, self.collection))
        finally:
            pump.close()

    async def _seen(self, kind: str, payload: dict[str, Any]) -> Event:
        if kind == "end":
            await self._ended(payload)
        return kind, payload

    async def _ended(self, payload: dict[str, Any]) -> None:
        # In a thread: recording a conversation's turn writes to the store.
        await anyio.to_thread.run_sync(self.ended, payload)


class PumpedResponse(StreamingResponse):
    """A stream's Server-Sent Events (``body``, made from the events of ``pump``), its pump
    closed however the response ends. A server of ASGI 2.4 raises OSError from the
    response's start when the client has gone: the body, whose ``finally`` closes the pump,
    then never starts, and the model would stream on for nobody, holding an answer slot (and
    a server's stop) until it ended."""

    def __init__(self, body: AsyncIterator[str], pump: EventPump) -> None:
        super().__init__(body, media_type="text/event-stream", headers=SSE_HEADERS)
        self.pump = pump

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.pump.close()
