"""Ollama's native ``POST {base_url}/api/chat``.

``stream: false`` answers one JSON object with ``message.content``; ``stream: true``
answers NDJSON, one object per line with a ``message.content`` delta, the last with
``done: true``. Sampling goes in ``options`` (``temperature``, ``num_predict``);
``format: "json"`` constrains the answer to JSON. ``stream`` is always sent, since
Ollama streams when it is left out. Tools go in ``tools`` (OpenAI's shape); the calls come
back in ``message.tool_calls`` with ``arguments`` as a JSON object, whole even when
streamed; a tool result goes back as a ``tool`` message naming the tool (``tool_name``).
Ollama has no ``tool_choice``: a turn without tools is one where none is offered.
(Ollama's OpenAI-compatible ``/v1`` works too, through the ``openai`` provider.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.jsonhttp import (
    HTTPStatusError,
    Transport,
    api_key,
    error_message,
    json_headers,
    parse_chunk,
)
from knowhub.providers.llms.base import LLM, ChatMessage, require_setting, require_url
from knowhub.providers.llms.tools import (
    ModelTurn,
    ToolCall,
    ToolCallsMessage,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    TurnMessage,
    arguments_text,
    call_id,
    tools_refused,
)

__all__ = ["OllamaChat", "create"]


class OllamaChat(LLM):
    """A model served by Ollama at ``base_url`` (the server root, e.g. http://localhost:11434).

    ``api_key`` is sent as ``Authorization: Bearer …`` when given (ollama.com, or a proxy
    in front of a server); a local Ollama needs none.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float = 0.1,
        max_tokens: int = 800,
    ) -> None:
        self.url = base_url.rstrip("/") + "/api/chat"
        self.model = model
        self.model_id = f"ollama:{model}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.transport = Transport(
            "llm ollama",
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            hints={
                401: "check the key (llm.api_key_env names its variable)",
                404: f"check llm.base_url and llm.model (is it pulled? ollama pull {model})",
            },
        )
        self._headers = json_headers(api_key)

    def _complete(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float, json_mode: bool
    ) -> str:
        body = self._body(messages, max_tokens, temperature, stream=False)
        if json_mode:
            body["format"] = "json"
        return self._answer_turn(self.transport.post_json(self.url, body, self._headers)).text

    def _stream(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float
    ) -> Iterator[str]:
        body = self._body(messages, max_tokens, temperature, stream=True)
        turn = self.transport.post_stream(self.url, body, self._headers, self._events)
        return (item for item in turn if isinstance(item, str))

    def _tool_turn(
        self,
        messages: list[TurnMessage],
        tools: list[ToolSpec],
        *,
        stream: bool,
        tool_choice: ToolChoice,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str | ModelTurn]:
        body = self._body(messages, max_tokens, temperature, stream=stream)
        if tools and tool_choice != "none":
            body["tools"] = [t.to_dict() for t in tools]
        try:
            if stream:
                yield from self.transport.post_stream(self.url, body, self._headers, self._events)
            else:
                yield self._answer_turn(self.transport.post_json(self.url, body, self._headers))
        except HTTPStatusError as exc:
            raise tools_refused(self.transport.what, self.model, exc) from exc

    def _body(
        self, messages: Sequence[TurnMessage], max_tokens: int, temperature: float, *, stream: bool
    ) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [_wire_message(m) for m in messages],
            "stream": stream,
            "options": {"temperature": temperature, "num_predict": max_tokens},
        }

    def _answer_turn(self, answer: Any) -> ModelTurn:
        what = self.transport.what
        if isinstance(answer, dict) and answer.get("error"):
            detail = error_message(json.dumps(answer).encode("utf-8"))
            raise ProviderError(f"{what}: {self.url} answered an error: {detail}")
        try:
            message = answer["message"]
            content = message["content"]
        except (KeyError, TypeError) as exc:
            raise ProviderError(
                f"{what}: not an Ollama chat answer: {str(answer)[:300]!r}"
            ) from exc
        if not isinstance(content, str):
            raise ProviderError(f"{what}: message content is {content!r}, not text")
        calls = _calls(what, message.get("tool_calls"), 0)
        if not calls and not content.strip():
            raise self._empty(answer.get("done_reason"))
        return ModelTurn(content, calls, answer.get("done_reason"))

    def _events(self, lines: Iterator[bytes]) -> Iterator[str | ModelTurn]:
        """A stream's text deltas as they come, then the whole turn (its tool calls come
        whole, in chunks of their own)."""
        what = self.transport.what
        text: list[str] = []
        calls: list[ToolCall] = []
        for raw in lines:
            line = raw.decode("utf-8", errors="replace").strip()
            if not line:
                continue
            chunk = parse_chunk(what, line)
            message = chunk.get("message", {})
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(message, dict) or not isinstance(content, str | None):
                raise ProviderError(f"{what}: not an Ollama chat chunk: {line[:300]!r}")
            if content:
                text.append(content)
                yield content
            calls.extend(_calls(what, message.get("tool_calls"), len(calls)))
            if chunk.get("done") is True:
                if not calls and not "".join(text).strip():
                    raise self._empty(chunk.get("done_reason"))
                yield ModelTurn("".join(text), tuple(calls), chunk.get("done_reason"))
                return
        raise ProviderError(f"{what}: {self.url} ended the stream before the answer was done")

    def _empty(self, reason: object) -> ProviderError:
        message = f"{self.transport.what}: {self.model} returned an empty answer"
        if reason == "length":
            return ProviderError(f"{message} (done_reason 'length'): raise llm.max_tokens")
        return ProviderError(f"{message} (done_reason {reason!r})" if reason else message)


def _wire_message(message: TurnMessage) -> dict[str, Any]:
    """``message`` as ``/api/chat`` takes it: call arguments as objects, results by name."""
    if isinstance(message, ToolCallsMessage):
        calls = [
            {"function": {"name": c.name, "arguments": _object(c.arguments)}} for c in message.calls
        ]
        return {"role": "assistant", "content": message.text, "tool_calls": calls}
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "content": message.content, "tool_name": message.call.name}
    if message.images:  # Ollama takes a turn's images as bare base64, beside its text
        return {**message.to_dict(), "images": [i.base64() for i in message.images]}
    return message.to_dict()


def _object(arguments: str) -> dict[str, Any]:
    """Arguments text as the object Ollama wants; the model's invalid JSON (already
    answered as a tool error) replays as no arguments, which Ollama accepts."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _calls(what: str, raw: object, first: int) -> tuple[ToolCall, ...]:
    """The ``message.tool_calls`` of an answer or chunk; ``first`` numbers the calls of a
    server that gives no ids (``call_<n>``), counting those of earlier chunks."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ProviderError(f"{what}: tool_calls is {str(raw)[:300]!r}, not a list")
    calls = []
    for n, item in enumerate(raw, first):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise ProviderError(f"{what}: not a tool call: {str(item)[:300]!r}")
        arguments = arguments_text(what, function.get("arguments"))
        calls.append(ToolCall(call_id(item.get("id"), n), name, arguments))
    return tuple(calls)


def create(settings: Settings) -> OllamaChat:
    opts = settings.llm
    base_url = require_url("ollama", "llm.base_url", opts.base_url, "http://localhost:11434")
    if base_url.endswith(("/v1", "/api", "/api/chat")):
        root = base_url.rsplit("/api", 1)[0].removesuffix("/v1")
        raise ConfigError(
            f"llm.base_url {base_url!r}: the ollama provider wants the server root, "
            f"{root!r} (for Ollama's OpenAI-compatible /v1, use llm.provider: openai)"
        )
    model = require_setting("ollama", "llm.model", opts.model, "llama3.1:8b or qwen2.5:7b")
    return OllamaChat(
        base_url,
        model,
        api_key=api_key(settings, opts.api_key_env, "llm.api_key_env"),
        timeout_s=opts.timeout_s,
        max_retries=opts.max_retries,
        backoff_s=opts.backoff_s,
        temperature=opts.temperature,
        max_tokens=opts.max_tokens,
    )
