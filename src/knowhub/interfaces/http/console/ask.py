"""The Ask page: a conversation over the answers (and chats) of this server, streamed.

``/ui/ask/stream`` sends the very events ``POST /api/ask`` (or ``/api/chat``, "use tools")
streams, under ``/ui`` so the session cookie reaches it; the page's script (static/ask.js)
draws them. Without script the form posts to ``/ui/ask`` and the whole answer comes back as
a page. Every POST must come from this server's own pages (:func:`.auth.check_same_origin`),
and a question is checked like the API's: the caller's collections, filters, session.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

from knowhub.caller import Caller
from knowhub.errors import KnowhubError, QueryError
from knowhub.interfaces.arguments import parse_key_values
from knowhub.interfaces.http.console.auth import check_same_origin, read_form
from knowhub.interfaces.http.console.failure import error_page, failure_body, on_failure
from knowhub.interfaces.http.console.feedback import feedback_store
from knowhub.interfaces.http.console.pages import names_of, pages_router
from knowhub.interfaces.http.console.render import page
from knowhub.interfaces.http.console.traces import find_trace
from knowhub.interfaces.http.deps import PrincipalDep, ServiceDep
from knowhub.interfaces.http.errors import describe_invalid
from knowhub.interfaces.http.schemas import AskBody, ChatBody
from knowhub.interfaces.http.service import Event, Service, note_collection, sse

__all__ = ["ask_page", "ask_stream", "ask_submit", "give_feedback", "linked", "router"]

STREAM = "/ui/ask/stream"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_CITE = re.compile(r"\[(\d{1,3})\]")

router = pages_router()


@router.get("/ask")
async def ask_page(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    context = await service.run(lambda: _context(service, principal, {}))
    return page(request, "ask.html", **context)


@router.post("/ask")
async def ask_submit(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    """The form without script: the whole answer, as a page."""
    form: dict[str, str] = {}

    async def form_again(exc: Exception) -> Response:  # the question, as it was typed
        context = await service.run(lambda: _context(service, principal, form))
        return error_page(request, exc, "ask.html", **context)

    on_failure(request, form_again)
    check_same_origin(request)
    form = await read_form(request)
    body = _ask_body(form, stream=False)
    question = await service.question(principal, body)
    note_collection(request, question.collection)
    end = await service.stream(question, "/ui/ask").answer()
    context = await service.run(lambda: _context(service, principal, form))
    context.update(answer=end, segments=linked(str(end.get("answer", "")), end["sources"]))
    return page(request, "ask.html", **context)


@router.post("/ask/stream")
async def ask_stream(request: Request, service: ServiceDep, principal: PrincipalDep) -> Response:
    """``text/event-stream`` of an answer (or a chat, with ``"tools": true``); a request that
    fails before the stream starts is answered ``{"error", "status"}`` with that status."""
    try:
        check_same_origin(request)
        data = await _json_body(request)
        events = await _begin(request, service, principal, data)
    except KnowhubError as exc:
        body = failure_body(request, exc)
        return JSONResponse(body, status_code=body["status"])
    return StreamingResponse(_sse_body(events), media_type="text/event-stream", headers=SSE_HEADERS)


@router.post("/traces/{trace_id}/feedback")
async def give_feedback(
    request: Request, service: ServiceDep, principal: PrincipalDep, trace_id: str
) -> Response:
    """Helpful or not (and a comment) on a trace the caller may read; JSON for the page's
    script (``Accept: application/json``), else back to the trace page."""
    wants_json = "application/json" in request.headers.get("accept", "")
    try:
        check_same_origin(request)
        form = await read_form(request)
        helpful = form.get("helpful", "")
        if helpful not in ("yes", "no"):
            raise QueryError(f"helpful {helpful!r} is not yes or no: pick one of the two buttons")
        found = await service.run(lambda: find_trace(service.app_for(principal), trace_id))
        if found.kind not in ("answer", "chat"):
            raise QueryError(f"trace {trace_id} is a {found.kind} run: feedback is on answers")
        store = feedback_store(service.settings.data_dir)
        entry = await service.run(
            lambda: store.add(trace_id, helpful == "yes", form.get("comment", ""), principal.name)
        )
    except KnowhubError as exc:
        if not wants_json:
            raise  # the console's error page
        body = failure_body(request, exc)
        return JSONResponse(body, status_code=body["status"])
    if wants_json:
        return JSONResponse({"saved": True, "trace_id": trace_id, "helpful": entry.helpful})
    return RedirectResponse(f"/ui/traces/{quote(trace_id)}?feedback=saved", 303)


def linked(text: str, sources: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """``text`` cut at its ``[n]`` citations: ``(piece, chunk id or None)``, the citation
    pieces naming the chunk of source ``n`` (an ``[n]`` with no such source stays text)."""
    by_number = {int(s["n"]): str(s["chunk_id"]) for s in sources}
    out: list[tuple[str, str | None]] = []
    at = 0
    for found in _CITE.finditer(text):
        chunk_id = by_number.get(int(found.group(1)))
        if chunk_id is None:
            continue
        if found.start() > at:
            out.append((text[at : found.start()], None))
        out.append((found.group(0), chunk_id))
        at = found.end()
    if at < len(text):
        out.append((text[at:], None))
    return out


def _context(service: Service, principal: Caller, form: dict[str, str]) -> dict[str, Any]:
    return {
        "names": names_of(service.app_for(principal)),
        "default": service.default_name(principal),
        "tools": service.settings.llm.provider != "none",
        "form": {
            "question": form.get("question", ""),
            "collection": form.get("collection", ""),
            "filters": form.get("filters", ""),
            "session_id": form.get("session_id", ""),
        },
        "answer": None,
        "segments": [],
    }


def _ask_body(data: dict[str, Any], stream: bool) -> AskBody:
    """An ask request from the page's fields (``filters``: ``KEY=VALUE`` words)."""
    filters = parse_key_values(str(data.get("filters") or "").split(), "filter")
    values = {
        "question": data.get("question", ""),
        "collection": data.get("collection") or None,
        "session_id": data.get("session_id") or None,
        "filters": filters or None,
        "stream": stream,
    }
    try:
        return AskBody(**values)
    except ValidationError as exc:
        raise QueryError(describe_invalid(exc.errors())) from exc


async def _json_body(request: Request) -> dict[str, Any]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise QueryError(f"expected a JSON body (application/json), got {kind or 'no body type'!r}")
    try:
        data = json.loads(await request.body())
    except ValueError as exc:
        raise QueryError(f"the body is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise QueryError('the body is not a JSON object: send {"question": "..."}')
    return data


async def _begin(
    request: Request, service: Service, principal: Caller, data: dict[str, Any]
) -> AsyncGenerator[Event, None]:
    """The answer's (or chat's) events, started: errors before its content are raised."""
    if not data.get("tools"):
        question = await service.question(principal, _ask_body(data, stream=True))
        note_collection(request, question.collection)
        streamed = service.stream(question, STREAM)
        first, pump = await streamed.begin()
        return streamed.events(first, pump)
    if service.settings.llm.provider == "none":
        raise QueryError("tools need a model: set llm.provider (it is none), or untick use tools")
    if str(data.get("filters") or "").strip():
        raise QueryError("filters apply to plain answers: clear them, or untick use tools")
    try:
        body = ChatBody(
            question=data.get("question", ""),
            collection=data.get("collection") or None,
            session_id=data.get("session_id") or None,
            stream=True,
        )
    except ValidationError as exc:
        raise QueryError(describe_invalid(exc.errors())) from exc
    chat = await service.chats.question(principal, body)
    note_collection(request, chat.collection)
    streamed = service.chats.stream(chat, STREAM)
    first, pump = await streamed.begin()
    return streamed.events(first, pump)


async def _sse_body(events: AsyncGenerator[Event, None]) -> AsyncIterator[str]:
    async with aclosing(events):
        async for kind, payload in events:
            yield sse(kind, payload)
