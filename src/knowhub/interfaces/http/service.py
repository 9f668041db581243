"""What every route shares: the App, the caller's limits, error bodies, answer bookkeeping.

Blocking App calls run in worker threads, answers stream from an :class:`EventPump`; both
are bounded (see :mod:`knowhub.interfaces.http.limits`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.requests import HTTPConnection

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.checks import check_collection_name, check_filters, check_query
from knowhub.config import Settings
from knowhub.errors import AuthError, CollectionNotFound, KnowhubError
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.http.chats import Chats
from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.health import HealthState
from knowhub.interfaces.http.limits import Gate
from knowhub.interfaces.http.metrics import ApiMetrics
from knowhub.interfaces.http.pump import EventPump
from knowhub.interfaces.http.schemas import QuestionBody
from knowhub.interfaces.http.sessions import Conversations
from knowhub.interfaces.security import PRINCIPAL_KEY
from knowhub.interfaces.wire import failed, wire
from knowhub.models import FilterValue
from knowhub.providers.llms.base import ChatMessage
from knowhub.scope import UNRESTRICTED, Scope

__all__ = ["COLLECTION_KEY", "Question", "Service", "note_collection", "principal_of", "sse"]

log = logging.getLogger("knowhub.http")
T = TypeVar("T")
Event = tuple[str, dict[str, Any]]
COLLECTION_KEY = "knowhub.collection"
"""Where a route notes the collection it is about (see :func:`note_collection`)."""


def principal_of(connection: HTTPConnection) -> Caller:
    """The caller the guard let in (only public paths let nobody in, and they use no data)."""
    found: Caller | None = connection.scope.get(PRINCIPAL_KEY)
    if found is None:
        raise AuthError("missing or invalid bearer token: send 'Authorization: Bearer <token>'")
    return found


def note_collection(connection: HTTPConnection, collection: str) -> str:
    """``collection``, noted as what the request is about: if it fails for want of that
    collection, the error handler answers 404 naming it."""
    connection.scope[COLLECTION_KEY] = collection
    return collection


def sse(kind: str, payload: dict[str, Any]) -> str:
    """One Server-Sent Event; JSON keeps ``data`` on one line (newlines are escaped)."""
    return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


@dataclass(frozen=True)
class Question:
    """An ask request, checked: what to pass to ``App.ask`` and whose session to extend."""

    text: str
    collection: str
    filters: dict[str, FilterValue]
    history: list[ChatMessage]
    owner: str
    session_id: str | None
    scope: Scope = UNRESTRICTED  # the asker's data scope


@dataclass
class Service:
    app: App
    settings: Settings
    metrics: ApiMetrics
    conversations: Conversations = field(default_factory=Conversations)
    drain: Drain = field(default_factory=Drain)  # the answers in flight, ended at shutdown
    health: HealthState = field(init=False)
    workers: Gate = field(init=False)
    answers: Gate = field(init=False)
    chats: Chats = field(init=False)

    def __post_init__(self) -> None:
        opts = self.settings.server
        self.chats = Chats(self)
        self.health = HealthState(self.app)
        self.workers = Gate("worker", opts.workers, opts.max_queued)
        self.answers = Gate("answer", opts.max_answers, opts.max_queued)

    @property
    def started(self) -> float:
        """When the server started (``time.time()``)."""
        return self.health.started

    def app_for(self, principal: Caller) -> App:
        """The App as ``principal`` may use it (``App.for_caller``): a collection it may not
        read is refused, listings and chunk look-ups leave those out, every read applies its
        data scope."""
        return self.app.for_caller(principal)

    def collection(self, principal: Caller, name: str | None, *, writing: bool = False) -> str:
        """``name``, or the collection a request naming none uses (the one rule of
        :mod:`knowhub.default_collection`, for the collections ``principal`` may read; an
        upload's, with ``writing``); either way one the caller may read."""
        resolved = (
            check_collection_name(name)
            if name
            else self.app_for(principal).default_collection(writing=writing)
        )
        principal.check_read(resolved)
        return resolved

    def default_name(self, principal: Caller) -> str:
        """What a form preselects: :meth:`collection`'s default for ``principal``; "" when
        it must name one (a token limited to several, none of them the configured one)."""
        try:
            return self.collection(principal, None)
        except KnowhubError:
            return ""

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` in one of ``server.workers`` threads (ServerBusyError past the queue)."""
        return await self.workers.run(call)

    async def failure(self, exc: BaseException, collection: str | None) -> dict[str, Any]:
        """The error body for ``exc``; 404 when the cause is a collection that does not exist
        (``collection``: the one the request is about, if known)."""
        if not isinstance(exc, KnowhubError):
            log.error("request failed", exc_info=exc)
        elif collection and isinstance(exc, CollectionNotFound):
            return error_body(
                f"unknown collection {collection!r}: ingest into it first (GET /api/collections "
                "lists those that exist)",
                404,
            )
        return error_body(exc)

    def question(self, principal: Caller, body: QuestionBody) -> Question:
        """Check an ask request up front, so its mistakes are answered before any stream."""
        text = check_query(body.question)
        collection = self.collection(principal, body.collection)
        filters = check_filters(body.filters)
        if body.history is not None:
            history = [ChatMessage(t.role, t.content) for t in body.history]
        elif body.session_id:
            history = self.conversations.history(principal.owner, body.session_id)
        else:
            history = []
        return Question(
            text, collection, filters, history, principal.owner, body.session_id, principal.scope
        )

    async def pump(self, question: Question) -> EventPump:
        """The answer's events, produced in a thread holding one of ``server.max_answers``
        slots until it ends (ServerBusyError when the queue for them is full)."""
        app = self.app.scoped(question.scope)
        release = await self.answers.acquire()
        try:
            return EventPump(
                lambda: wire(
                    app.ask(
                        question.text,
                        question.collection,
                        question.filters,
                        question.history,
                        session_id=question.session_id,
                    )
                ),
                on_exit=release,
                drain=self.drain,
            ).start()
        except BaseException:
            release()
            raise

    async def begin(self, question: Question) -> tuple[list[Event], EventPump]:
        """The answer's events up to its first content, and the pump for the rest.

        Held back until the answer starts, so that a bad request still gets its status (the
        pump is closed when that fails)."""
        pump = await self.pump(question)
        try:
            return await pump.until_content(), pump
        except BaseException:
            pump.close()
            raise

    def answered(self, question: Question, end: dict[str, Any]) -> None:
        """Bookkeeping for a finished answer: metrics, and the session's memory."""
        self.metrics.answers.labels(str(end.get("hit_type"))).inc()
        self.metrics.observe_stages(end.get("timings_ms", {}))
        if question.session_id:
            self.conversations.record(
                question.owner, question.session_id, question.text, str(end.get("answer", ""))
            )

    async def answer(self, question: Question) -> dict[str, Any]:
        """The whole answer (the ``end`` payload); errors are raised. Produced like a
        stream, so that a slow model holds an answer slot, never a search worker."""
        pump = await self.pump(question)
        try:
            async for kind, payload in pump:
                if kind == "end":
                    self.answered(question, payload)
                    return payload
        finally:
            pump.close()
        raise RuntimeError("the answer ended without an 'end' event")

    async def events(
        self, question: Question, first: list[Event], pump: EventPump, route: str
    ) -> AsyncGenerator[Event, None]:
        """The answer's events from ``first`` on; a failure becomes one last ``error`` event."""
        try:
            for kind, payload in first:
                if kind == "end":
                    self.answered(question, payload)
                yield kind, payload
            async for kind, payload in pump:
                if kind == "end":
                    self.answered(question, payload)
                yield kind, payload
        except Exception as exc:  # the status is sent: the stream's last event is all that is left
            self.metrics.errors.labels(route, type(exc).__name__).inc()
            yield failed(await self.failure(exc, question.collection))
        finally:
            pump.close()
