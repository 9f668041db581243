"""What every route shares: the App, the caller's limits, error bodies, answer bookkeeping.

Blocking App calls run in worker threads, answers stream from an :class:`EventPump`; both
are bounded (see :mod:`knowhub.interfaces.http.limits`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
from starlette.requests import HTTPConnection

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.checks import check_filters, check_query
from knowhub.config import Settings
from knowhub.errors import AuthError, CollectionNotFound, KnowhubError
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.http.chats import Chats
from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.health import HealthState
from knowhub.interfaces.http.limits import Gate
from knowhub.interfaces.http.metrics import ApiMetrics
from knowhub.interfaces.http.schemas import QuestionBody
from knowhub.interfaces.http.sessions import Conversations
from knowhub.interfaces.http.streamed import Streamed
from knowhub.interfaces.security import PRINCIPAL_KEY
from knowhub.interfaces.wire import wire
from knowhub.models import FilterValue
from knowhub.providers.llms.base import ChatMessage

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
    """An ask request, checked: what to ask of the collection's handle, as whom, and whose
    session to extend."""

    text: str
    collection: str
    filters: dict[str, FilterValue]
    history: list[ChatMessage]
    owner: str
    session_id: str | None
    app: App  # the asker's (App.for_caller): its collections, its data scope


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
    changes: Gate = field(init=False)
    chats: Chats = field(init=False)

    def __post_init__(self) -> None:
        opts = self.settings.server
        self.chats = Chats(self)
        self.health = HealthState(self.app)
        self.workers = Gate("worker", opts.workers, opts.max_queued)
        self.answers = Gate("answer", opts.max_answers, opts.max_queued)
        # A change waits its turn (Runtime.writing: an upload job may hold it for minutes)
        # in the event loop, not in a worker thread the searches need.
        self.changes = Gate("change", 1, opts.max_queued)

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
        return self.app_for(principal).named(name, writing=writing)

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

    async def change(self, call: Callable[[], T]) -> T:
        """``call()``, a change of the knowledge base, in the one thread changes run in
        (ServerBusyError past the queue)."""
        return await self.changes.run(call)

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

    async def question(self, principal: Caller, body: QuestionBody) -> Question:
        """Check an ask request up front, so its mistakes are answered before any stream;
        in a thread: the collection's check and the conversation read the store."""
        return await anyio.to_thread.run_sync(self._question, principal, body)

    def _question(self, principal: Caller, body: QuestionBody) -> Question:
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
            text,
            collection,
            filters,
            history,
            principal.owner,
            body.session_id,
            self.app_for(principal),
        )

    def stream(self, question: Question, route: str) -> Streamed:
        """The answer to ``question`` (see :class:`Streamed`), for ``route``."""
        handle = question.app.collection(question.collection)

        def produce() -> Iterator[Event]:
            return wire(
                handle.ask(
                    question.text,
                    question.filters,
                    question.history,
                    session_id=question.session_id,
                )
            )

        return Streamed(
            self, produce, lambda end: self.answered(question, end), route, question.collection
        )

    def answered(self, question: Question, end: dict[str, Any]) -> None:
        """Bookkeeping for a finished answer: metrics, and the session's memory."""
        self.metrics.answers.labels(str(end.get("hit_type"))).inc()
        self.metrics.observe_stages(end.get("timings_ms", {}))
        if question.session_id:
            self.conversations.record(
                question.owner, question.session_id, question.text, str(end.get("answer", ""))
            )
