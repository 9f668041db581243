"""The embedder contract: batching and validation live here, once."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from knowhub.errors import KnowhubError, ProviderError

__all__ = ["Embedder", "Vectors"]

Vectors = NDArray[np.float32]


class Embedder(ABC):
    """Turns text into L2-normalised float32 vectors.

    Subclasses implement :meth:`_encode` for one batch. ``model_id`` identifies
    the exact model (it keys the embedding cache and is recorded per collection);
    ``languages`` lists the languages the model understands, or ``None`` for a
    multilingual model — fusion gives the dense leg no weight for the others.
    """

    model_id: str
    dim: int
    languages: frozenset[str] | None = None
    # Cosine similarities meaning "unrelated" and "clearly about it" for this model, the dense
    # half of a hit's relevance (knowhub.query.relevance; None: judged on words alone), and
    # the same per query language where the model's cosines run higher or lower.
    relevance_range: tuple[float, float] | None = None
    relevance_by_language: Mapping[str, tuple[float, float]] = MappingProxyType({})
    # Whether a query may be debiased towards passages in other languages
    # (knowhub.query.crosslingual): only for models where that was measured to help.
    cross_lingual: bool = False
    # Whether its relevance range is measured on each collection instead
    # (knowhub.query.calibration): a model knowhub has no measurement of.
    derives_relevance: bool = False
    batch_size: int = 16
    # Whether ingest may fan batches out to worker processes (False when encoding is cheap).
    parallel: bool = True
    # Whether encoding releases the GIL: ingest then encodes on one background thread per
    # core, overlapping the loading and chunking of the next files.
    background: bool = False

    @abstractmethod
    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        """Encode one batch; return shape ``(len(texts), dim)``."""

    def calibration(self, language: str) -> tuple[float, float] | None:
        """The relevance range for a query in ``language``."""
        return self.relevance_by_language.get(language, self.relevance_range)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Encode passages in batches of ``batch_size``."""
        return self._batched(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Encode several queries (as :meth:`embed_query` does one) in batches."""
        return self._batched(texts, is_query=True)

    def _batched(self, texts: Sequence[str], is_query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._checked(list(texts[i : i + self.batch_size]), is_query=is_query)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(parts)

    def embed_query(self, text: str) -> Vectors:
        """Encode one query; returns shape ``(dim,)``."""
        vector: Vectors = self._checked([text], is_query=True)[0]
        return vector

    def warm(self) -> None:
        """Load the model now (servers call this before they report ready): one query
        encoded, so the first request does not pay for loading or the first run."""
        self.embed_query("warm-up")

    def _checked(self, texts: list[str], is_query: bool) -> Vectors:
        try:
            out = np.asarray(self._encode(texts, is_query), dtype=np.float32)
        except KnowhubError:
            raise
        except Exception as exc:  # a model failure must name the model, not leak internals
            raise ProviderError(f"embedder {self.model_id} failed: {exc}") from exc
        if out.shape != (len(texts), self.dim):
            raise ProviderError(
                f"embedder {self.model_id} returned shape {out.shape}, "
                f"expected ({len(texts)}, {self.dim})"
            )
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        normalised: Vectors = out / np.maximum(norms, 1e-12)
        return normalised
