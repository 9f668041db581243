"""``/api/stream``: answers over a WebSocket, any number of questions per connection.

The client sends ``{"question", "collection"?, "filters"?, "session_id"?, "history"?,
"id"?}``; the server answers with the events of ``/api/ask`` as JSON objects,
``{"event": "stage" | "sources" | "token" | "end" | "error", ...payload}``, each carrying the
question's ``id`` when it gave one. Questions are answered one after another. A bad
message or a failed answer is an ``error`` event, and the connection stays open.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from contextlib import aclosing
from typing import Any

from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect

from knowhub.caller import Caller
from knowhub.errors import QueryError
from knowhub.interfaces.http.errors import describe_invalid, error_body
from knowhub.interfaces.http.schemas import WsQuestion
from knowhub.interfaces.http.service import Service
from knowhub.interfaces.security import PRINCIPAL_KEY

__all__ = ["ROUTE", "answer_socket"]

log = logging.getLogger("knowhub.http")
ROUTE = "/api/stream"


async def answer_socket(service: Service, websocket: WebSocket) -> None:
    principal: Caller | None = websocket.scope.get(PRINCIPAL_KEY)
    if principal is None:  # the guard refuses these; a second check costs nothing
        await websocket.close(code=1008)
        return
    await websocket.accept()
    service.metrics.websockets.inc()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            raw = message.get("text")
            if raw is None:
                raw = (message.get("bytes") or b"").decode("utf-8", errors="replace")
            await _answer(service, websocket, principal, raw)
    except WebSocketDisconnect:
        return
    except Exception as exc:  # a bug: the client still gets a close frame saying so
        log.error("WebSocket failed", exc_info=exc)
        await _close(websocket, 1011, "internal error: see the server log")
    finally:
        service.metrics.websockets.dec()


async def _answer(service: Service, websocket: WebSocket, principal: Caller, raw: str) -> None:
    """Answer one message; WebSocketDisconnect (client gone) is the only thing raised."""
    started = time.perf_counter()
    status = 200
    try:
        body = _parse(raw)
    except QueryError as exc:
        status = 400
        await _send(websocket, {}, "error", error_body(str(exc), status))
        _count(service, status, started, "ValidationError")
        return
    ref: dict[str, Any] = {} if body.id is None else {"id": body.id}
    collection = None
    try:
        question = await service.question(principal, body)
        collection = question.collection
        streamed = service.stream(question, ROUTE)
        first, pump = await streamed.begin()
    except Exception as exc:  # no status on an open socket: an error event, and it stays open
        failure = await service.failure(exc, collection)
        status = failure["status"]
        await _send(websocket, ref, "error", failure)
        _count(service, status, started, type(exc).__name__)
        return
    # aclosing: when the client leaves mid-answer, the pump stops now, not at garbage collection.
    async with aclosing(streamed.events(first, pump)) as events:
        async for kind, payload in events:
            if kind == "error":
                status = payload["status"]
            await _send(websocket, ref, kind, payload)
    _count(service, status, started, None)


def _parse(raw: str) -> WsQuestion:
    """The message as a question, or a QueryError saying what is wrong with it.

    Python's json reads a ``\\ud800`` escape (as FastAPI does for bodies), so the model's
    own check names the field; jiter would only say "Invalid JSON". Its message still
    reports JSON that Python cannot read either.
    """
    try:
        try:
            data = json.loads(raw)
        except ValueError:
            return WsQuestion.model_validate_json(raw)  # raises, saying where the JSON breaks
        except RecursionError as exc:  # '[' * 5000: Python's parser recurses once a level
            raise QueryError(
                "message: JSON nested too deeply to read: send a question object "
                '{"question": …} as the API describes'
            ) from exc
        return WsQuestion.model_validate(data)
    except ValidationError as exc:
        raise QueryError(describe_invalid(exc.errors(), "message")) from exc


async def _send(websocket: WebSocket, ref: dict[str, Any], kind: str, payload: Any) -> None:
    try:
        await websocket.send_json({"event": kind, **ref, **payload})
    except (RuntimeError, OSError) as exc:  # the socket closed under us: the client is gone
        raise WebSocketDisconnect(1006) from exc


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with contextlib.suppress(RuntimeError, OSError):  # already closed: nothing to tell
        await websocket.close(code, reason)


def _count(service: Service, status: int, started: float, error: str | None) -> None:
    metrics = service.metrics
    metrics.requests.labels(ROUTE, "WS", str(status)).inc()
    metrics.latency.labels(ROUTE).observe(time.perf_counter() - started)
    if error is not None:  # errors inside an answer's stream are counted where they happen
        metrics.errors.labels(ROUTE, error).inc()
