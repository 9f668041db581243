"""The reranker contract: validation lives here, once.

A reranker rescores the best fused hits of a search against the query; the query
pipeline (``knowhub.query.rerank``) reorders by those scores and keeps the fused
order whenever a reranker fails.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from knowhub.config import Settings
from knowhub.errors import KnowhubError, ProviderError

__all__ = ["Reranker", "disabled"]


class Reranker(ABC):
    """Scores passages for one query; higher means more relevant.

    Subclasses implement :meth:`_score`; scores are on the provider's own scale
    (logits, probabilities, 0–10 grades) and only their order matters.
    ``model_id`` names the provider and model in messages.
    """

    model_id: str

    @abstractmethod
    def _score(self, query: str, texts: list[str]) -> Sequence[float]:
        """Return one score per text, in the order of ``texts``."""

    def warm(self) -> None:
        """Load what the first call would (servers call this before they report ready);
        nothing by default: a remote reranker has nothing to load."""
        return

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Score ``texts`` against ``query``: one finite float per text, in order.

        Raises:
            ProviderError: the backend failed or returned the wrong number of scores
                or a non-finite one (a missing extra stays a ``ConfigError``).
        """
        if not texts:
            return []
        try:
            raw = list(self._score(query, list(texts)))
        except KnowhubError:
            raise
        except Exception as exc:  # a backend failure must name the model, not leak internals
            raise ProviderError(f"reranker {self.model_id} failed: {exc}") from exc
        if len(raw) != len(texts):
            raise ProviderError(
                f"reranker {self.model_id} returned {len(raw)} scores for {len(texts)} passages"
            )
        scores = [float(s) for s in raw]
        if not all(math.isfinite(s) for s in scores):
            raise ProviderError(f"reranker {self.model_id} returned a non-finite score: {scores}")
        return scores


def disabled(settings: Settings) -> None:
    """Factory of the provider ``none``: no reranking (the default)."""
    return None
