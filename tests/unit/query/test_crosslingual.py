"""knowhub.query.crosslingual: when a search crosses languages, and what it changes."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.query import crosslingual


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the passages it encodes."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.model_id = f"counting-{uuid.uuid4()}"  # a fresh cache entry per test
        self.encoded = 0

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        self.encoded += len(texts)
        return super()._encode(texts, is_query)


def test_a_search_crosses_languages_when_a_top_hit_is_in_another() -> None:
    assert crosslingual.is_cross_lingual("zh", ["zh", "zh", "en"])
    assert not crosslingual.is_cross_lingual("zh", ["zh", "und", "zh"])
    assert not crosslingual.is_cross_lingual("und", ["en", "ru"])
    assert not crosslingual.is_cross_lingual("ja", ["zh", "zh"])  # not measured: left alone
    # Only the best LOOKED_AT hits decide: a stray passage far down does not.
    assert not crosslingual.is_cross_lingual("en", ["en"] * crosslingual.LOOKED_AT + ["ru"])


def test_lexical_hits_in_another_language_are_damped() -> None:
    factors = crosslingual.lexical_damping(
        "ru", {1: "ru", 2: "en", 3: "und", 4: "zh", 5: "ja"}, 0.3
    )
    assert factors == {1: 1.0, 2: 0.3, 3: 1.0, 4: 0.3, 5: 1.0}


def test_the_language_mean_is_embedded_once_per_embedder_and_language() -> None:
    embedder = CountingEmbedder()
    mean = crosslingual.language_mean(embedder, "ru")
    assert mean is not None and mean.shape == (64,)
    sentences = embedder.encoded
    assert sentences >= 20  # the reference text, one passage a sentence
    again = crosslingual.language_mean(embedder, "ru")
    assert again is not None and np.array_equal(again, mean)
    assert embedder.encoded == sentences
    assert crosslingual.language_mean(embedder, "ko") is None  # no reference text for it
    zh = crosslingual.language_mean(embedder, "zh")
    assert zh is not None and not np.allclose(zh, mean)


def test_the_reference_texts_say_the_same_in_each_language() -> None:
    counts = {}
    for language in ("en", "ru", "zh"):
        sentences = crosslingual.reference_sentences(language)
        assert sentences is not None
        counts[language] = len(sentences)
    assert len(set(counts.values())) == 1, counts  # line n is one sentence in every language


def test_debiasing_moves_the_query_away_from_its_language_and_keeps_unit_length() -> None:
    query = np.array([0.8, 0.6, 0.0], dtype=np.float32)
    mean = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    moved = crosslingual.debiased(query, mean, 0.4)
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0)
    assert float(moved @ mean) < float(query @ mean)
    assert np.array_equal(crosslingual.debiased(query, query, 1.0), query)  # nothing left
