"""Vectors of queries and sentences, kept across requests in the application's caches.

The keys are those the search already uses (``knowhub.collection`` for a query,
``knowhub.query.crosslingual`` for a sentence), so an answer reuses the question's vector its
search computed and the sentence vectors a cross-lingual search computed, and the other way
round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from knowhub.providers.embedders.base import Embedder, Vectors

__all__ = ["CachedVectors", "VectorCache", "sentence_key"]


class VectorCache(Protocol):
    """What a vector cache offers (``knowhub.query.cache.LRUCache`` is one)."""

    def get(self, key: Hashable) -> Vectors | None: ...

    def put(self, key: Hashable, value: Vectors) -> None: ...


class _NoCache:
    def get(self, key: Hashable) -> Vectors | None:
        return None

    def put(self, key: Hashable, value: Vectors) -> None:
        return None


def sentence_key(embedder: Embedder, sentence: str) -> tuple[str, int, str]:
    """A sentence's passage vector's key: the embedder, its dimension, the text's sha-1."""
    digest = hashlib.sha1(sentence.encode("utf-8"), usedforsecurity=False).hexdigest()
    return embedder.model_id, embedder.dim, digest


@dataclass(frozen=True)
class CachedVectors:
    """An embedder's query and passage vectors, looked up before they are computed."""

    embedder: Embedder
    queries: VectorCache = field(default_factory=_NoCache)
    sentences: VectorCache = field(default_factory=_NoCache)

    def query(self, text: str) -> Vectors:
        """``text`` encoded as a query (the key a search stores it under)."""
        key = (self.embedder.model_id, text.strip())
        vector = self.queries.get(key)
        if vector is None:
            vector = self.embedder.embed_query(text.strip())
            self.queries.put(key, vector)
        return vector

    def passages(self, texts: Sequence[str]) -> Vectors:
        """``texts`` encoded as passages, one row each; the missing ones in one batch."""
        found: dict[str, Vectors] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            cached = self.sentences.get(sentence_key(self.embedder, text))
            if cached is None:
                missing.append(text)
            else:
                found[text] = cached
        for text, row in zip(missing, self.embedder.embed_documents(missing), strict=True):
            found[text] = np.array(row, dtype=np.float32)  # a copy, not a view of the batch
            self.sentences.put(sentence_key(self.embedder, text), found[text])
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([found[text] for text in texts])
