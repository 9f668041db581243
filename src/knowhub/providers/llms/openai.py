"""OpenAI-compatible ``POST {base_url}/chat/completions``: OpenAI, DeepSeek, DashScope, vLLM, …

One wire format serves OpenAI (``https://api.openai.com/v1``), DeepSeek
(``https://api.deepseek.com``), DashScope's compatible mode
(``https://dashscope.aliyuncs.com/compatible-mode/v1``), vLLM and llama.cpp's server
(``http://host:8000/v1``) and Ollama's ``/v1``. A whole answer is
``choices[0].message.content``; a stream is server-sent events whose
``choices[0].delta.content`` are the deltas, ended by ``data: [DONE]``.
:class:`ChatCompletionsLLM` holds the format; Azure (``knowhub.providers.llms.azure``)
reuses it with its own URL and key header.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.jsonhttp import Transport, api_key, error_message, parse_chunk, sse_data
from knowhub.providers.llms.base import LLM, ChatMessage, require_setting, require_url

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
        return self._answer_text(answer)

    def _stream(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float
    ) -> Iterator[str]:
        body = self._body(messages, max_tokens, temperature, stream=True)
        return self.transport.post_stream(self.url, body, self._headers, self._deltas)

    def _body(
        self, messages: list[ChatMessage], max_tokens: int, temperature: float, *, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model} if self._send_model else {}
        body.update(
            messages=[m.to_dict() for m in messages],
            temperature=temperature,
            max_tokens=max_tokens,
            stream=stream,
        )
        return body

    def _answer_text(self, answer: Any) -> str:
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
        if not content or not content.strip():
            raise self._empty(choice.get("finish_reason"), message.get("refusal"))
        return content

    def _deltas(self, lines: Iterator[bytes]) -> Iterator[str]:
        what = self.transport.what
        finish: str | None = None
        sent = False
        events = 0
        for data in sse_data(lines):
            events += 1
            if data.strip() == "[DONE]":
                break
            chunk = parse_chunk(what, data)
            choices = chunk.get("choices")
            if not isinstance(choices, list):
                raise ProviderError(f"{what}: not a chat completion chunk: {data[:300]!r}")
            if not choices:
                continue  # Azure's prompt_filter_results, the usage chunk
            choice = choices[0]
            if not isinstance(choice, dict) or not isinstance(choice.get("delta", {}), dict):
                raise ProviderError(f"{what}: not a chat completion chunk: {data[:300]!r}")
            content = (choice.get("delta") or {}).get("content")
            if content is not None and not isinstance(content, str):
                raise ProviderError(f"{what}: delta content is {content!r}, not text")
            if content:
                sent = True
                yield content
            finish = choice.get("finish_reason") or finish
        else:
            if not events:
                raise ProviderError(
                    f"{what}: {self.url} answered no server-sent events; is it an "
                    "OpenAI-compatible chat completions endpoint?"
                )
            if finish is None:  # EOF without [DONE] or a finish_reason: the answer was cut
                raise ProviderError(
                    f"{what}: {self.url} ended the stream before the answer was finished"
                )
        if not sent:
            raise self._empty(finish, None)

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
