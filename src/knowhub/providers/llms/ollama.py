"""Ollama's native ``POST {base_url}/api/chat``.

``stream: false`` answers one JSON object with ``message.content``; ``stream: true``
answers NDJSON, one object per line with a ``message.content`` delta, the last with
``done: true``. Sampling goes in ``options`` (``temperature``, ``num_predict``);
``format: "json"`` constrains the answer to JSON. ``stream`` is always sent, since
Ollama streams when it is left out. (Ollama's OpenAI-compatible ``/v1`` works too,
through the ``openai`` provider.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.jsonhttp import (
    Transport,
    api_key,
    error_message,
    json_headers,
    parse_chunk,
)
from knowhub.providers.llms.base import LLM, ChatMessage, require_setting, require_url

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
        answer = self.transport.post_json(self.url, body, self._headers)
        what = self.transport.what
        if isinstance(answer, dict) and answer.get("error"):
            detail = error_message(json.dumps(answer).encode("utf-8"))
            raise ProviderError(f"{what}: {self.url} answered an error: {detail}")
        try:
            content = answer["message"]["content"]
        except (KeyError, TypeError) as exc:
            raise ProviderError(
                f"{what}: not an Ollama chat answer: {str(answer)[:300]!r}"
            ) from exc
        if not isinstance(content, str):
            raise ProviderError(f"{what}: message content is {content!r}, not text")
        if not content.strip():
            raise self._empty(answer.get("done_reason"))
        return content

    def _stream(
        self, messages: list[ChatMessage], *, max_tokens: int, temperature: float
    ) -> Iterator[str]:
        body = self._body(messages, max_tokens, temperature, stream=True)
        return self.transport.post_stream(self.url, body, self._headers, self._deltas)

    def _body(
        self, messages: list[ChatMessage], max_tokens: int, temperature: float, *, stream: bool
    ) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "stream": stream,
            "options": {"temperature": temperature, "num_predict": max_tokens},
        }

    def _deltas(self, lines: Iterator[bytes]) -> Iterator[str]:
        what = self.transport.what
        sent = False
        for raw in lines:
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            chunk = parse_chunk(what, text)
            message = chunk.get("message", {})
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(message, dict) or not isinstance(content, str | None):
                raise ProviderError(f"{what}: not an Ollama chat chunk: {text[:300]!r}")
            if content:
                sent = True
                yield content
            if chunk.get("done") is True:
                if not sent:
                    raise self._empty(chunk.get("done_reason"))
                return
        raise ProviderError(f"{what}: {self.url} ended the stream before the answer was done")

    def _empty(self, reason: object) -> ProviderError:
        message = f"{self.transport.what}: {self.model} returned an empty answer"
        if reason == "length":
            return ProviderError(f"{message} (done_reason 'length'): raise llm.max_tokens")
        return ProviderError(f"{message} (done_reason {reason!r})" if reason else message)


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
