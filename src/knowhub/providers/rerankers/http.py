"""A remote ``/rerank`` endpoint: Jina, Cohere or Hugging Face TEI style.

Jina (``https://api.jina.ai/v1/rerank``) and Cohere (``https://api.cohere.com/v2/rerank``)
take ``{model, query, documents, top_n}`` and answer
``{"results": [{"index", "relevance_score"}, …]}``; TEI (``http://host:8080/rerank``)
takes ``{query, texts}`` and answers ``[{"index", "score"}, …]``. vLLM and Infinity
serve the Jina form. Results come back sorted by relevance; we map them to input order.
"""

from __future__ import annotations

from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.jsonhttp import Transport, api_key, json_headers
from knowhub.providers.rerankers.base import Reranker

__all__ = ["HttpReranker", "create", "parse_results"]

# The key of the score in each result, per style.
_SCORE_KEY = {"jina": "relevance_score", "cohere": "relevance_score", "tei": "score"}


class HttpReranker(Reranker):
    """Calls a rerank endpoint once per search with every candidate passage."""

    def __init__(
        self,
        url: str,
        style: str = "jina",
        model: str = "",
        api_key: str | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        if style not in _SCORE_KEY:
            raise ConfigError(f"reranker.http.style {style!r} is not one of jina, cohere, tei")
        self.url = url
        self.style = style
        self.model = model
        self.timeout_s = timeout_s
        # No retries: a search waits for its reranker, and keeps its fused order without it.
        self._transport = Transport(f"reranker http ({style})", timeout_s=timeout_s, max_retries=0)
        self._headers = json_headers(api_key)
        self.model_id = f"http:{style}:{model or url}"

    def _score(self, query: str, texts: list[str]) -> list[float]:
        answer = self._transport.post_json(self.url, self._body(query, texts), self._headers)
        return parse_results(answer, self.style, len(texts))

    def _body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.style == "tei":
            return {"query": query, "texts": texts, "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": len(texts)}
        if self.model:
            body["model"] = self.model
        return body


def parse_results(answer: Any, style: str, n: int) -> list[float]:
    """Scores in input order from a rerank answer; anything malformed is a ProviderError."""
    results = answer if style == "tei" else _get(answer, "results")
    if not isinstance(results, list):
        raise ProviderError(f"reranker http ({style}): expected a list of results, got {answer!r}")
    key = _SCORE_KEY[style]
    scores: dict[int, float] = {}
    for item in results:
        index, score = _get(item, "index"), _get(item, key)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise ProviderError(f"reranker http ({style}): bad index in {item!r} ({n} passages)")
        if not isinstance(score, int | float) or isinstance(score, bool):
            raise ProviderError(f"reranker http ({style}): bad {key} in {item!r}")
        if index in scores:
            raise ProviderError(f"reranker http ({style}): index {index} returned twice")
        scores[index] = float(score)
    if len(scores) != n:
        raise ProviderError(f"reranker http ({style}): scores for {len(scores)} of {n} passages")
    return [scores[i] for i in range(n)]


def _get(item: Any, key: str) -> Any:
    if not isinstance(item, dict) or key not in item:
        raise ProviderError(f"reranker http: expected an object with {key!r}, got {item!r}")
    return item[key]


def create(settings: Settings) -> HttpReranker:
    opts = settings.reranker.http
    if not opts.url:
        raise ConfigError(
            "reranker 'http' needs reranker.http.url, the full endpoint "
            "(e.g. https://api.jina.ai/v1/rerank or http://localhost:8080/rerank)"
        )
    return HttpReranker(
        opts.url,
        opts.style,
        opts.model,
        api_key=api_key(settings, opts.api_key_env, "reranker.http.api_key_env"),
        timeout_s=settings.reranker.timeout_s,
    )
