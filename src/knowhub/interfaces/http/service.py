"""What every route shares: the App, the caller's limits, error answers, answer bookkeeping.

Blocking App calls run in worker threads; answers stream from an :class:`EventPump`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse

from knowhub.app import App
from knowhub.config import Settings
from knowhub.errors import AuthError, KnowhubError, QueryError, StoreError
from knowhub.interfaces.http.errors import error_body
from knowhub.interfaces.http.metrics import ERROR_KEY, ApiMetrics
from knowhub.interfaces.http.pump import EventPump
from knowhub.interfaces.http.schemas import QuestionBody
from knowhub.interfaces.http.sessions import Conversations
from knowhub.interfaces.security import PRINCIPAL_KEY, Principal
from knowhub.models import FilterValue
from knowhub.providers.llms.base import ChatMessage
from knowhub.validate import check_collection_name, check_filters, check_query

__all__ = ["Question", "Service", "principal_of", "sse"]

log = logging.getLogger("knowhub.http")
T = TypeVar("T")
Event = tuple[str, dict[str, Any]]


def principal_of(connection: HTTPConnection) -> Principal:
    """The caller the guard let in (only public paths let nobody in, and they use no data)."""
    found: Principal | None = connection.scope.get(PRINCIPAL_KEY)
    if found is None:
        raise AuthError("missing or invalid bearer token: send 'Authorization: Bearer <token>'")
    return found


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


@dataclass
class Service:
    app: App
    settings: Settings
    metrics: ApiMetrics
    conversations: Conversations = field(default_factory=Conversations)
    started: float = field(default_factory=time.time)

    def collection(self, principal: Principal, name: str | None) -> str:
        """The collection to use (the configured one by default), if the caller may read it."""
        resolved = check_collection_name(name or self.settings.collection)
        principal.check_read(resolved)
        return resolved

    async def run(self, call: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(call)

    async def failure(self, exc: BaseException, collection: str | None) -> dict[str, Any]:
        """The error body for ``exc``; 404 when the cause is a collection that does not exist."""
        if not isinstance(exc, KnowhubError):
            log.error("request failed", exc_info=exc)
        elif (
            isinstance(exc, QueryError | StoreError)
            and collection
            and (await self._missing(collection))
        ):
            return error_body(
                f"unknown collection {collection!r}: ingest into it first (GET /api/collections "
                "lists those that exist)",
                404,
            )
        return error_body(exc)

    async def fail(
        self, connection: HTTPConnection, exc: BaseException, collection: str | None = None
    ) -> JSONResponse:
        body = await self.failure(exc, collection)
        connection.scope[ERROR_KEY] = type(exc).__name__
        return JSONResponse(body, status_code=body["status"])

    def question(self, principal: Principal, body: QuestionBody) -> Question:
        """Check an ask request up front, so its mistakes are answered before any stream."""
        text = check_query(body.question)
        collection = self.collection(principal, body.collection)
        filters = check_filters(body.filters)
        if body.history is not None:
            history = [ChatMessage(t.role, t.content) for t in body.history]
        elif body.session_id:
            history = self.conversations.history(principal.name, body.session_id)
        else:
            history = []
        return Question(text, collection, filters, history, principal.name, body.session_id)

    def pump(self, question: Question) -> EventPump:
        app = self.app
        return EventPump(
            lambda: app.ask(question.text, question.collection, question.filters, question.history)
        ).start()

    def answered(self, question: Question, end: dict[str, Any]) -> None:
        """Bookkeeping for a finished answer: metrics, and the session's memory."""
        self.metrics.answers.labels(str(end.get("hit_type"))).inc()
        self.metrics.observe_stages(end.get("timings_ms", {}))
        if question.session_id:
            self.conversations.record(
                question.owner, question.session_id, question.text, str(end.get("answer", ""))
            )

    async def answer(self, question: Question) -> dict[str, Any]:
        """The whole answer (the ``end`` payload); errors are raised."""

        def collect() -> dict[str, Any]:
            for kind, payload in self.app.ask(
                question.text, question.collection, question.filters, question.history
            ):
                if kind == "end":
                    return payload
            raise RuntimeError("the answer ended without an 'end' event")

        end = await self.run(collect)
        self.answered(question, end)
        return end

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
        except Exception as exc:
            self.metrics.errors.labels(route, type(exc).__name__).inc()
            yield "error", await self.failure(exc, question.collection)
        finally:
            pump.close()

    async def _missing(self, collection: str) -> bool:
        try:
            names = await self.run(lambda: {c.name for c in self.app.collections()})
        except KnowhubError:
            return False
        return collection not in names
