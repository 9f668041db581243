"""The rerank stage: rescore the best fused hits, or keep the fused order on any failure.

Runs after fusion and before the top-k cut. The reranker gets the top
``max(candidates, top_k)`` fused hits, so every hit returned is reranked; it runs
under a deadline, and a timeout or provider error leaves the fused order as it was,
with the reason in :class:`RerankOutcome` (and so in the search result).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from knowhub.errors import KnowhubError, ProviderError
from knowhub.models import Hit
from knowhub.providers.rerankers.base import Reranker

__all__ = ["RerankOutcome", "RerankStage", "reorder"]

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RerankOutcome:
    """What the rerank stage did for one search.

    Attributes:
        provider: the configured provider name (``none`` when reranking is off).
        used: whether the hits are in the reranker's order.
        error: why the fused order was kept, when the reranker failed or timed out.
        ms: time spent in the reranker.
    """

    provider: str = "none"
    used: bool = False
    error: str | None = None
    ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "used": self.used,
            "error": self.error,
            "ms": round(self.ms, 3),
        }


@dataclass(frozen=True)
class RerankStage:
    """A reranker with its stage settings (see ``reranker.*`` in the configuration)."""

    reranker: Reranker
    provider: str
    candidates: int = 20
    timeout_s: float = 10.0

    def window(self, top_k: int) -> int:
        """How many fused hits to rescore for a request of ``top_k``."""
        return max(self.candidates, top_k)

    def __call__(self, query: str, hits: list[Hit]) -> tuple[list[Hit], RerankOutcome]:
        """Rescore ``hits`` (fused order) and return them reordered, or unchanged on failure."""
        if not hits:
            return hits, RerankOutcome(self.provider)
        start = time.perf_counter()
        texts = [hit.text for hit in hits]
        try:
            scores = _within(self.timeout_s, lambda: self.reranker.score(query, texts))
        except KnowhubError as exc:
            log.warning("rerank with %s failed, keeping the fused order: %s", self.provider, exc)
            return hits, RerankOutcome(self.provider, False, str(exc), _ms(start))
        return reorder(hits, scores), RerankOutcome(self.provider, True, None, _ms(start))


def reorder(hits: Sequence[Hit], scores: Sequence[float]) -> list[Hit]:
    """Hits sorted by reranker score, best first; ties keep the fused order.

    Each hit's ``score`` becomes its rerank score (``rerank_score`` too); ``fused_score``
    and ``fused_rank`` keep where fusion put it.
    """
    if len(hits) != len(scores):
        raise ValueError(f"{len(scores)} scores for {len(hits)} hits")
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
    return [replace(hits[i], score=scores[i], rerank_score=scores[i]) for i in order]


def _within(timeout_s: float, call: Callable[[], T]) -> T:
    """Run ``call`` in a daemon thread; give up waiting after ``timeout_s``.

    A local model cannot be interrupted, so on a timeout its thread finishes on its
    own and its result is dropped (daemon: it never holds up the process's exit).
    """
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="knowhub-rerank", daemon=True).start()
    if not done.wait(timeout_s):
        raise ProviderError(f"reranker timed out after {timeout_s:g} s (reranker.timeout_s)")
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
