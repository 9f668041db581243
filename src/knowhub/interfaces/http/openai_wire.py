"""OpenAI's chat-completions format for knowhub's answers, on the wire (``/v1/…``).

An answer's (or a chat's) events become a ``chat.completion`` object, or with ``stream``
``chat.completion.chunk`` Server-Sent Events ending in ``data: [DONE]``. Two fields are
knowhub's own, which OpenAI clients ignore: ``citations`` on the message (on the last
chunk's ``delta`` when streamed), the sources the text cites as ``[n]``, each with its
``n``; and ``trace_id`` beside ``id`` (the answer's trace, for ``knowhub traces show``).
``usage`` is an estimate, at four characters a token: knowhub does not see the model's
counts, and an extractive answer uses no model at all.

Errors under ``/v1/`` are answered in OpenAI's shape, ``{"error": {"message", "type",
"param", "code"}}``, by :class:`OpenAIErrors`: the guard's refusals (401, 413, 429), invalid
bodies and the routes' errors alike, with the status they would have had anyway.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub.interfaces.wire import WireEvent

__all__ = [
    "AGENT_MODEL",
    "Completion",
    "OpenAIErrors",
    "cited",
    "model_entry",
    "openai_error",
]

AGENT_MODEL = "knowhub-agent"
"""The model of the tool-using chat (``/api/chat``), listed when an LLM is configured."""
CHARS_PER_TOKEN = 4  # OpenAI's rule of thumb for English text
DONE = "data: [DONE]\n\n"

# OpenAI's error types and codes by status (its SDKs choose the exception by the status).
_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    409: ("invalid_request_error", "not_configured"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    503: ("server_error", "server_busy"),
}


def model_entry(name: str, created: int) -> dict[str, Any]:
    """One model of ``GET /v1/models``."""
    return {"id": name, "object": "model", "created": created, "owned_by": "knowhub"}


def cited(end: dict[str, Any]) -> list[dict[str, Any]]:
    """The sources ``end`` (an answer's or a chat's last event) cites, each with its ``n``."""
    found = end.get("citations")
    if isinstance(found, list):  # a chat's: the sources its text cites already
        return found
    numbers = set(found.get("cited", [])) if isinstance(found, dict) else set()
    return [source for source in end.get("sources", []) if source["n"] in numbers]


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Completion:
    """One completion of ``model``: what its response, or each of its chunks, repeats.
    ``prompt_chars``: the length of the conversation it answers (for ``usage``)."""

    model: str
    prompt_chars: int
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))

    def whole(self, end: dict[str, Any]) -> dict[str, Any]:
        """The ``chat.completion`` object of a finished answer (``end``)."""
        message = {"role": "assistant", "content": end["answer"], "citations": cited(end)}
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}
        return {
            **self._head("chat.completion", end.get("trace_id")),
            "choices": [choice],
            "usage": self.usage(str(end["answer"])),
        }

    def usage(self, answer: str) -> dict[str, int]:
        prompt, completion = _tokens(self.prompt_chars), _tokens(len(answer))
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    async def chunks(
        self, events: AsyncGenerator[WireEvent, None], include_usage: bool
    ) -> AsyncIterator[str]:
        """The answer's ``events`` as OpenAI's stream: the role, the text as it comes, the
        citations and ``finish_reason`` last, then (``include_usage``) a chunk with no
        choices and the usage, and ``[DONE]``. A failure mid-stream is one ``error`` chunk
        (the status is sent already), as OpenAI streams one."""
        yield self._data(self._chunk({"role": "assistant", "content": ""}))
        said = False
        async with aclosing(events):
            async for kind, payload in events:
                if kind == "token" and payload["text"]:
                    said = True
                    yield self._data(self._chunk({"content": payload["text"]}))
                elif kind == "end":
                    if not said:  # an answer whose text came whole, or empty
                        yield self._data(self._chunk({"content": payload["answer"]}))
                    yield self._data(self._last(payload))
                    if include_usage:
                        usage = self.usage(str(payload["answer"]))
                        yield self._data({**self._head(), "choices": [], "usage": usage})
                elif kind == "error":
                    yield self._data(openai_error(payload))
        yield DONE

    def _last(self, end: dict[str, Any]) -> dict[str, Any]:
        chunk = self._chunk({"citations": cited(end)}, "stop")
        return {**chunk, "trace_id": end.get("trace_id")}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**self._head(), "choices": [choice]}

    def _head(
        self, kind: str = "chat.completion.chunk", trace_id: str | None = None
    ) -> dict[str, Any]:
        head = {"id": self.id, "object": kind, "created": self.created, "model": self.model}
        return head if kind != "chat.completion" else {**head, "trace_id": trace_id}

    @staticmethod
    def _data(payload: dict[str, Any]) -> str:
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def openai_error(body: dict[str, Any]) -> dict[str, Any]:
    """knowhub's error body (``{"error", "status", "param"?}``) in OpenAI's shape."""
    status = int(body.get("status", 500))
    kind, code = _TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    error = {"message": body["error"], "type": kind, "param": body.get("param"), "code": code}
    return {"error": error}


class OpenAIErrors:
    """Rewrites the JSON error bodies of ``/v1/…`` responses into OpenAI's shape, whoever
    answered them (the guard, the validation handler, a route): one place, so no refusal
    reaches an OpenAI client in a shape its SDK cannot read."""

    def __init__(self, app: ASGIApp, prefix: str = "/v1/") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body = b""

        async def sending(message: Message) -> None:
            nonlocal start, body
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message  # held until the whole body is known
            elif start is not None and message["type"] == "http.response.body":
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    await _send_rewritten(send, start, body)
            else:
                await send(message)

        await self.app(scope, receive, sending)


async def _send_rewritten(send: Send, start: Message, body: bytes) -> None:
    try:
        found = json.loads(body)
    except ValueError:
        found = None
    if isinstance(found, dict) and isinstance(found.get("error"), str):
        found.setdefault("status", start["status"])
        body = json.dumps(openai_error(found), ensure_ascii=False).encode()
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({**start, "headers": headers})
    await send({"type": "http.response.body", "body": body})
