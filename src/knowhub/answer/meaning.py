"""How close sentences are to a question in meaning, on the embedder's calibrated scale."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from knowhub.providers.embedders.cached import CachedVectors

__all__ = ["closeness"]


def closeness(
    vectors: CachedVectors | None, language: str, question: str, texts: Sequence[str]
) -> list[float] | None:
    """Each text's cosine with ``question`` placed on the embedder's relevance range for
    ``language`` (0: unrelated, 1: clearly about it), the scale search relevance and
    verification use; None without an embedder, or one without a calibration (``hashing``:
    its cosines measure shared words, which the lexical side already counts)."""
    if vectors is None or not texts:
        return None
    calibration = vectors.embedder.calibration(language)
    if calibration is None:
        return None
    low, high = calibration
    cosines = vectors.passages(texts) @ vectors.query(question)
    return [float(x) for x in np.clip((cosines - low) / (high - low), 0.0, 1.0)]
