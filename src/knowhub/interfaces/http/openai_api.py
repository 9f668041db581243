"""OpenAI-compatible endpoints, for chat front ends and SDKs that speak OpenAI's API (Open
WebUI, LibreChat, Chatbox, the ``openai`` package): ``GET /v1/models`` and
``POST /v1/chat/completions``, with a knowhub token as the API key.

Each collection the token may read is a model, and ``knowhub-agent`` (``/api/chat``'s
tool-using chat) one more when an LLM is configured. A completion is ``/api/ask``'s answer
(``/api/chat``'s for ``knowhub-agent``), run by the same :meth:`Service.stream`: the same
checks, answer slots, data scope and traces. The last user message is the question; the
user and assistant turns before it are its history, which the follow-up rewrite reads as
it reads ``/api/ask``'s ``history``. System messages are ignored (the server's own prompt
applies), so are sampling options; ``n`` above 1, ``tools`` and a ``response_format``
other than text are refused, naming the field. The format: :mod:`.openai_wire`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response

from knowhub.app import App
from knowhub.caller import Caller
from knowhub.collection_names import readable_views
from knowhub.errors import CollectionNotFound, QueryError
from knowhub.interfaces.http.deps import DoorDep, PrincipalDep, ServiceDep
from knowhub.interfaces.http.openai_wire import AGENT_MODEL, Completion, model_entry
from knowhub.interfaces.http.routes import BEARER
from knowhub.interfaces.http.schemas import (
    MAX_HISTORY,
    ChatBody,
    CompletionBody,
    CompletionMessage,
    QuestionBody,
    Turn,
)
from knowhub.interfaces.http.service import Service, note_collection
from knowhub.interfaces.http.streamed import PumpedResponse, Streamed

__all__ = [
    "CompletionError",
    "UnknownModelError",
    "chat_completions",
    "list_models",
    "openai_router",
]

ROUTE = "/v1/chat/completions"
_router = APIRouter(dependencies=[Depends(BEARER)])


class CompletionError(QueryError):
    """A request OpenAI's API would accept that knowhub cannot answer as asked (400);
    ``param``: the field at fault, as OpenAI's errors name it."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


class UnknownModelError(CollectionNotFound):
    """A model that is not one the token may use (404): no collection it may read, told
    the same whether the collection exists or not."""

    param = "model"


def openai_router() -> APIRouter:
    """The ``/v1`` routes."""
    return _router


@_router.get("/v1/models", summary="OpenAI-compatible: the models (collections) this token reads")
async def list_models(service: ServiceDep, door: DoorDep) -> Any:
    return {"object": "list", "data": await service.run(lambda: _models(service, door))}


@_router.post(
    ROUTE,
    summary="OpenAI-compatible: a cited answer from the collection named as the model "
    "(JSON, or OpenAI's Server-Sent Events with stream: true)",
    response_model=None,
)
async def chat_completions(
    body: CompletionBody, request: Request, service: ServiceDep, principal: PrincipalDep
) -> Response:
    _check_supported(body)
    question, history = _conversation(body.messages)
    door = service.app_for(principal)
    models = [m["id"] for m in await service.run(lambda: _models(service, door))]
    if body.model not in models:
        raise UnknownModelError(
            f"model {body.model!r} does not exist or this token may not use it: use one of "
            f"{', '.join(models) or '(none)'} (GET /v1/models lists them)"
        )
    streamed = await _streamed(service, principal, body, question, history)
    note_collection(request, streamed.collection)
    completion = Completion(body.model, len(question) + sum(len(t.content) for t in history))
    if not body.stream:
        return JSONResponse(completion.whole(await streamed.answer()))
    first, pump = await streamed.begin()
    usage = bool((body.stream_options or {}).get("include_usage"))
    return PumpedResponse(completion.chunks(streamed.events(first, pump), usage), pump)


def _models(service: Service, door: App) -> list[dict[str, Any]]:
    """Each collection ``door``'s caller may read, and the agent when there is a model.
    Not ``door.collections()``: a scoped caller's counts, which a model needs not, read every
    document record."""
    views = readable_views(door.runtime, door.caller)
    found = [model_entry(v.name, _epoch(v.created_at, service)) for v in views]
    if service.settings.llm.provider != "none":
        found.append(model_entry(AGENT_MODEL, int(service.started)))
    return found


def _epoch(iso: str, service: Service) -> int:
    """``created`` of a model: when its collection was made (the server's start if the
    store's time cannot be read)."""
    try:
        return int(datetime.fromisoformat(iso).timestamp())
    except ValueError:
        return int(service.started)


async def _streamed(
    service: Service, principal: Caller, body: CompletionBody, question: str, history: list[Turn]
) -> Streamed:
    """The answer (a chat with ``knowhub-agent``) as ``/api/ask`` (``/api/chat``) runs it."""
    if body.model == AGENT_MODEL:
        chat = ChatBody(question=question, history=history, stream=body.stream)
        return service.chats.stream(await service.chats.question(principal, chat), ROUTE)
    asked = QuestionBody(question=question, collection=body.model, history=history)
    return service.stream(await service.question(principal, asked), ROUTE)


def _conversation(messages: list[CompletionMessage]) -> tuple[str, list[Turn]]:
    """The question (the last user message) and the turns before it (the last
    :data:`MAX_HISTORY` user and assistant messages that hold text)."""
    users = [i for i, message in enumerate(messages) if message.role == "user"]
    if not users:
        raise CompletionError(
            "messages holds no user message: send the question as the last message with "
            "role 'user'",
            "messages",
        )
    last = users[-1]
    if not messages[last].text.strip():
        raise CompletionError(
            f"messages[{last}], the last user message, holds no text: put the question in it",
            "messages",
        )
    turns = [
        Turn(role=m.role, content=m.text)
        for m in messages[:last]
        if m.role in ("user", "assistant") and m.text.strip()
    ]
    return messages[last].text, turns[-MAX_HISTORY:]


def _check_supported(body: CompletionBody) -> None:
    if body.n not in (None, 1):
        raise CompletionError(
            f"n={body.n} is not supported: knowhub makes one answer per request; leave n out "
            "or set it to 1",
            "n",
        )
    if body.tools or body.functions:
        raise CompletionError(
            "tools are not supported: knowhub answers from its collections and calls no "
            "client tools; leave tools out (the model knowhub-agent calls knowhub's own tools)",
            "tools" if body.tools else "functions",
        )
    kind = (body.response_format or {}).get("type", "text")
    if kind != "text":
        raise CompletionError(
            f"response_format {kind!r} is not supported: answers are text with [n] "
            'citations; leave response_format out or use {"type": "text"}',
            "response_format",
        )
