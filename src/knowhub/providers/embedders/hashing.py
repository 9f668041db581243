"""A deterministic, dependency-free embedder: hashed bag of word tokens.

Useful offline and in tests (it is instant and stable across runs); its
semantic quality is that of a bag of words, so it is never the default.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from knowhub.config import Settings
from knowhub.lang import index_tokens
from knowhub.providers.embedders.base import Embedder, Vectors

__all__ = ["HashingEmbedder", "create"]


class HashingEmbedder(Embedder):
    """Feature hashing of language-aware tokens (Weinberger et al., 2009)."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.model_id = f"hashing-{dim}"
        self.batch_size = 256
        self.parallel = False

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = index_tokens(text, joined=False)  # its vectors as before joined terms
            if not tokens:
                continue
            slots, signs = zip(*(_feature(token, self.dim) for token in tokens), strict=True)
            out[row] = np.bincount(slots, weights=signs, minlength=self.dim)
        return out


@functools.lru_cache(maxsize=1 << 16)
def _feature(token: str, dim: int) -> tuple[int, float]:
    """The slot and sign of ``token`` (a corpus repeats its words: hashed once each)."""
    value = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
    return (value >> 1) % dim, 1.0 if value & 1 else -1.0


def create(settings: Settings) -> HashingEmbedder:
    return HashingEmbedder(settings.embedder.hashing.dim)
