"""An LLM as reranker, over an OpenAI-compatible ``/chat/completions`` endpoint.

One request per search grades every candidate 0–10 (listwise, as in Sun et al. 2023,
"Is ChatGPT good at search?", but with grades rather than a permutation, so a reply
is easy to check). The reply must be ``{"scores": [...]}`` with one number per
passage; anything else is an error and the search keeps its fused order.
"""

from __future__ import annotations

import json
import re
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.jsonhttp import Transport, api_key, json_headers
from knowhub.providers.rerankers.base import Reranker

__all__ = ["LlmReranker", "build_messages", "create", "parse_scores"]

SYSTEM = (
    "You grade search results. For each numbered passage, rate how well it answers the "
    "query, from 0 (irrelevant) to 10 (answers it fully). Reply with JSON only, exactly "
    '{"scores": [s1, s2, ...]}: one number per passage, in passage order.'
)
# Models often wrap JSON in a Markdown fence even when told not to; that alone is forgiven.
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", flags=re.DOTALL)


class LlmReranker(Reranker):
    """Asks a chat model for one 0–10 grade per passage."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        max_passage_chars: int = 1500,
        json_mode: bool = True,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_s = timeout_s
        self.max_passage_chars = max_passage_chars
        self.json_mode = json_mode
        # No retries: a search waits for its reranker, and keeps its fused order without it.
        self._transport = Transport("reranker llm", timeout_s=timeout_s, max_retries=0)
        self._headers = json_headers(api_key)
        self.model_id = f"llm:{model}"

    def _score(self, query: str, texts: list[str]) -> list[float]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": build_messages(query, texts, self.max_passage_chars),
            "temperature": 0,
            "stream": False,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        answer = self._transport.post_json(self.url, body, self._headers)
        return parse_scores(_content(answer), len(texts))


def build_messages(query: str, texts: list[str], max_chars: int) -> list[dict[str, str]]:
    """The chat messages: instructions, then the query and the numbered passages."""
    passages = "\n\n".join(
        f"[{i}] {' '.join(text.split())[:max_chars]}" for i, text in enumerate(texts, start=1)
    )
    user = (
        f"Query: {query}\n\nPassages:\n{passages}\n\n"
        f'Reply {{"scores": [...]}} with exactly {len(texts)} numbers from 0 to 10.'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def parse_scores(content: str, n: int) -> list[float]:
    """``{"scores": [n numbers in 0..10]}`` → the scores; anything else is a ProviderError."""
    text = content.strip()
    fenced = _FENCE.match(text)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise ProviderError(f"reranker llm: reply is not JSON: {content[:200]!r}") from exc
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, list) or len(scores) != n:
        raise ProviderError(
            f'reranker llm: expected {{"scores": [{n} numbers]}}, got {content[:200]!r}'
        )
    for score in scores:
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 10:
            raise ProviderError(f"reranker llm: score {score!r} is not a number from 0 to 10")
    return [float(s) for s in scores]


def _content(answer: Any) -> str:
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ProviderError(f"reranker llm: not a chat completion: {str(answer)[:200]!r}") from exc
    if not isinstance(content, str):
        raise ProviderError(f"reranker llm: message content is {content!r}, not text")
    return content


def create(settings: Settings) -> LlmReranker:
    opts = settings.reranker.llm
    if not opts.base_url or not opts.model:
        raise ConfigError(
            "reranker 'llm' needs reranker.llm.base_url (an OpenAI-compatible API root such "
            "as http://localhost:11434/v1) and reranker.llm.model"
        )
    return LlmReranker(
        opts.base_url,
        opts.model,
        api_key=api_key(settings, opts.api_key_env, "reranker.llm.api_key_env"),
        timeout_s=settings.reranker.timeout_s,
        max_passage_chars=opts.max_passage_chars,
        json_mode=opts.json_mode,
    )
