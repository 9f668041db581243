"""OpenAI-compatible ``POST {base_url}/chat/completions``: OpenAI, DeepSeek, DashScope, vLLM, …

One wire format serves OpenAI (``https://api.openai.com/v1``), DeepSeek
(``https://api.deepseek.com``), DashScope's compatible mode
(``https://dashscope.aliyuncs.com/compatible-mode/v1``), vLLM and llama.cpp's server
(``http://host:8000/v1``) and Ollama's ``/v1``. A whole answer is
``choices[0].message.content``; a stream is server-sent events whose
``choices[0].delta.content`` are the deltas, ended by ``data: [DONE]``. Tools go in
``tools`` (with ``tool_choice``); the calls come back in ``message.tool_calls``, or
streamed as ``delta.tool_calls`` pieces keyed by ``index`` whose ``arguments`` text is
split across chunks. :class:`ChatCompletionsLLM` holds the format; Azure
(``knowhub.providers.llms.azure``) reuses it with its own URL and key header.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.jsonhttp import (
    HTTPStatusError,
    Transport,
    api_key,
    error_message,
    parse_chunk,
    sse_data,
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

__all__ = ["ChatCompletionsLLM", "OpenAIChat", "create"]


class ChatCompletionsLLM(LLM):
    """The chat-completions wire format, sent to ``url`` with ``headers``.

    Args:
        url: the full endpoint.
        model: sent as ``model`` unless ``send_model`` is False (Azure picks the
            model by deployment).
        headers: extra request headers (the credential).
        transport: timeouts, retries and the name used in messages.
        model_id: ``provider:model``, for messages and answers.
    """

    def __init__(
        self,
        url: str,
        model: str,
        headers: Mapping[str, str],
        transport: Transport,
        *,
        model_id: str,
        temperature: float = 0.1,
        max_tokens: int = 800,
        send_model: bool = True,
    ) -> None:
        self.url = url
        self.model = model
        self.model_id = model_id
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.transport = transport
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        }
        self._send_model = send_model

    def _complete(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float, json_mode: bool
    ) -> str:
        body = self._body(messages, max_tokens, temperature, stream=False)
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        answer = self.transport.post_json(self.url, body, self._headers)
        return self._answer_turn(answer).text

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
        if tools:  # OpenAI rejects an empty list, and a tool_choice without tools
            body.update(tools=[t.to_dict() for t in tools], tool_choice=tool_choice)
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
        body: dict[str, Any] = {"model": self.model} if self._send_model else {}
        body.update(
            messages=[_wire_message(m) for m in messages],
            temperature=temperature,
            max_tokens=max_tokens,
            stream=stream,
        )
        return body

    def _answer_turn(self, answer: Any) -> ModelTurn:
        what = self.transport.what
        if isinstance(answer, dict) and answer.get("error"):  # some proxies send errors as 200
            detail = error_message(json.dumps(answer).encode("utf-8"))
            raise ProviderError(f"{what}: {self.url} answered an error: {detail}")
        try:
            choice = answer["choices"][0]
            message = choice["message"]
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ProviderError(f"{what}: not a chat completion: {str(answer)[:300]!r}") from exc
        if content is not None and not isinstance(content, str):
            raise ProviderError(f"{what}: message content is {content!r}, not text")
        calls = _answered_calls(what, message.get("tool_calls"))
        if not calls and (not content or not content.strip()):
            raise self._empty(choice.get("finish_reason"), message.get("refusal"))
        return ModelTurn(content or "", calls, choice.get("finish_reason"))

    def _events(self, lines: Iterator[bytes]) -> Iterator[str | ModelTurn]:
        """A stream's text deltas as they come, then the whole turn."""
        what = self.transport.what
        finish: str | None = None
        text: list[str] = []
        calls = _StreamedCalls(what)
        seen = False  # any event at all
        for data in sse_data(lines):
            seen = True
            if data.strip() == "[DONE]":
                break
            delta, finished = self._delta(data)
            content = delta.get("content")
            if content is not None and not isinstance(content, str):
                raise ProviderError(f"{what}: delta content is {content!r}, not text")
            if content:
                text.append(content)
                yield content
            calls.add(delta.get("tool_calls"))
            finish = finished or finish
        else:
            if not seen:
                raise ProviderError(
                    f"{what}: {self.url} answered no server-sent events; is it an "
                    "OpenAI-compatible chat completions endpoint?"
                )
            if finish is None:  # EOF without [DONE] or a finish_reason: the answer was cut
                raise ProviderError(
                    f"{what}: {self.url} ended the stream before the answer was finished"
                )
        turn = ModelTurn("".join(text), calls.finished(), finish)
        if not turn.tool_calls and not turn.text.strip():
            raise self._empty(finish, None)
        yield turn

    def _delta(self, data: str) -> tuple[dict[str, Any], str | None]:
        """One chunk's delta and finish_reason (an empty delta for a chunk without choices:
        Azure's prompt_filter_results, the usage chunk)."""
        what = self.transport.what
        chunk = parse_chunk(what, data)
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise ProviderError(f"{what}: not a chat completion chunk: {data[:300]!r}")
        if not choices:
            return {}, None
        choice = choices[0]
        if not isinstance(choice, dict) or not isinstance(choice.get("delta") or {}, dict):
            raise ProviderError(f"{what}: not a chat completion chunk: {data[:300]!r}")
        return choice.get("delta") or {}, choice.get("finish_reason")

    def _empty(self, finish: object, refusal: object) -> ProviderError:
        message = f"{self.transport.what}: {self.model} returned an empty answer"
        if refusal:
            return ProviderError(f"{message}; it refused: {str(refusal)[:300]}")
        if finish == "length":
            return ProviderError(
                f"{message} (finish_reason 'length'): raise llm.max_tokens; reasoning models "
                "spend tokens before they answer"
            )
        if finish:
            return ProviderError(f"{message} (finish_reason {finish!r})")
        return ProviderError(message)


def _wire_message(message: TurnMessage) -> dict[str, Any]:
    """``message`` as the chat-completions API takes it."""
    if isinstance(message, ToolCallsMessage):
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.calls
        ]
        return {"role": "assistant", "content": message.text or None, "tool_calls": calls}
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.call.id, "content": message.content}
    if message.images:  # content parts: the text, then each image as a data URL
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
        parts += [
            {"type": "image_url", "image_url": {"url": f"data:{i.mime};base64,{i.base64()}"}}
            for i in message.images
        ]
        return {"role": message.role, "content": parts}
    return message.to_dict()


def _answered_calls(what: str, raw: object) -> tuple[ToolCall, ...]:
    """The ``message.tool_calls`` of a whole answer (absent or null: none)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ProviderError(f"{what}: tool_calls is {str(raw)[:300]!r}, not a list")
    calls = []
    for n, item in enumerate(raw):
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(item, dict) or not isinstance(function, dict):
            raise ProviderError(f"{what}: not a tool call: {str(item)[:300]!r}")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"{what}: a tool call without a name: {str(item)[:300]!r}")
        arguments = arguments_text(what, function.get("arguments"))
        calls.append(ToolCall(call_id(item.get("id"), n), name, arguments))
    return tuple(calls)


@dataclass
class _Partial:
    """A streamed tool call so far."""

    id: str | None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _StreamedCalls:
    """The tool calls of a stream, put together from ``delta.tool_calls`` pieces.

    A call's first piece carries its ``index``, ``id`` and name, the next ones more of
    its ``arguments`` text under the same index. Ollama's ``/v1`` gives every call of a
    parallel batch index 0, told apart by a new ``id``: a new id opens a new call.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._calls: list[_Partial] = []
        self._at: dict[object, _Partial] = {}

    def add(self, pieces: object) -> None:
        if pieces is None:
            return
        if not isinstance(pieces, list):
            raise ProviderError(f"{self._what}: delta tool_calls is {pieces!r}, not a list")
        for piece in pieces:
            function = (piece.get("function") or {}) if isinstance(piece, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if (
                not isinstance(piece, dict)
                or not isinstance(function, dict)
                or not isinstance(name, str | None)
                or not isinstance(arguments, str | None)
            ):
                raise ProviderError(f"{self._what}: not a tool call delta: {str(piece)[:300]!r}")
            call = self._call(piece.get("index"), piece.get("id"))
            call.name = call.name or name or ""
            if arguments:
                call.arguments.append(arguments)

    def _call(self, index: object, given: object) -> _Partial:
        known = self._at.get(index)
        new_id = given if isinstance(given, str) and given else None
        if known is None or (new_id and known.id and new_id != known.id):
            known = self._at[index] = _Partial(new_id)
            self._calls.append(known)
        known.id = known.id or new_id
        return known

    def finished(self) -> tuple[ToolCall, ...]:
        calls = []
        for n, call in enumerate(self._calls):
            if not call.name:
                raise ProviderError(f"{self._what}: streamed a tool call without a name")
            arguments = arguments_text(self._what, "".join(call.arguments))
            calls.append(ToolCall(call_id(call.id, n), call.name, arguments))
        return tuple(calls)


class OpenAIChat(ChatCompletionsLLM):
    """Any OpenAI-compatible server at ``base_url`` (the API root, without /chat/completions).

    ``api_key`` is sent as ``Authorization: Bearer …`` when given (local servers need none).
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
        hints = {
            401: _KEY_HINT if api_key else _NO_KEY_HINT,
            403: _KEY_HINT if api_key else _NO_KEY_HINT,
            404: "check llm.base_url (the API root, e.g. https://api.openai.com/v1) and llm.model",
        }
        transport = Transport(
            "llm openai",
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            hints=hints,
        )
        super().__init__(
            base_url.rstrip("/") + "/chat/completions",
            model,
            {"Authorization": f"Bearer {api_key}"} if api_key else {},
            transport,
            model_id=f"openai:{model}",
            temperature=temperature,
            max_tokens=max_tokens,
        )


_KEY_HINT = "check the key (llm.api_key_env names its variable)"
_NO_KEY_HINT = "the server wants a key: set llm.api_key_env to the variable holding it"


def create(settings: Settings) -> OpenAIChat:
    opts = settings.llm
    base_url = require_url(
        "openai",
        "llm.base_url",
        opts.base_url,
        "https://api.openai.com/v1 (DeepSeek: https://api.deepseek.com, "
        "vLLM or llama.cpp: http://localhost:8000/v1)",
    )
    if base_url.endswith("/chat/completions"):
        raise ConfigError(
            f"llm.base_url {base_url!r} is the full endpoint; give the API root, "
            f"{base_url.removesuffix('/chat/completions')!r}"
        )
    example = "gpt-4o-mini (DeepSeek: deepseek-chat, DashScope: qwen-plus)"
    model = require_setting("openai", "llm.model", opts.model, example)
    return OpenAIChat(
        base_url,
        model,
        api_key=api_key(settings, opts.api_key_env, "llm.api_key_env"),
        timeout_s=opts.timeout_s,
        max_retries=opts.max_retries,
        backoff_s=opts.backoff_s,
        temperature=opts.temperature,
        max_tokens=opts.max_tokens,
    )
