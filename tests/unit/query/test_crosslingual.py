"""knowhub.query.crosslingual: when a search crosses languages, and what it changes."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from knowhub.lang.sentences import sentences
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.query import crosslingual
from knowhub.query.cache import LRUCache
from knowhub.testing.hits import hit


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the passages it encodes."""

    def __init__(self) -> None:
        super().__init__(dim=64)
        self.model_id = f"counting-{uuid.uuid4()}"  # a fresh cache entry per test
        self.encoded = 0

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        self.encoded += 0 if is_query else len(texts)
        return super()._encode(texts, is_query)


def test_a_search_crosses_languages_when_a_hit_is_in_another() -> None:
    assert crosslingual.any_other("zh", ["zh", "zh", "en"])
    assert not crosslingual.any_other("zh", ["zh", "und", "zh"])
    assert not crosslingual.any_other("und", ["en", "ru"])
    assert not crosslingual.any_other("ja", ["zh", "zh"])  # not measured: left alone
    assert crosslingual.any_other("en", ["en"] * crosslingual.LOOKED_AT + ["ru"])


def test_a_passage_stored_in_another_language_is_read_by_its_words() -> None:
    # More Latin letters than Han characters: stored "en", but its words are Chinese.
    latin_named = hit(
        "MonoDevelop是个适用于Linux、Mac OS X和Microsoft Windows的开放源代码集成开发环境",
        language="en",
    )
    english = hit("Machine Learning Journal, 5:1--17, 1995. The need for bias.", language="en")
    chinese = hit("绿茶是未经发酵的茶。", language="zh")
    assert crosslingual.read_languages("zh", [latin_named, english, chinese]) == ["zh", "en", "zh"]
    # Only a label other than the question's is read again.
    assert crosslingual.read_languages("en", [latin_named, chinese]) == ["en", "zh"]


def test_a_question_its_own_language_answers_is_not_searched_across_languages() -> None:
    rows = {
        1: hit("Hotels: 住宿 and 报销 up to 150 a night.", language="en"),  # holds the terms
        2: hit("出差住宿每晚最多报销六百元。", language="zh", section_path="报销"),
        3: hit("绿茶是未经发酵的茶。", language="zh"),
    }
    terms = ["住宿", "报销"]
    calibration = (0.7, 0.9)
    # The Chinese passage holds both terms and its cosine is at the top of the range.
    assert crosslingual.answered_at_home("zh", [(1, 0.95), (2, 0.9)], rows, terms, calibration, 0.6)
    # At the low end of the range its relevance is the terms' half alone: 0.5.
    assert not crosslingual.answered_at_home(
        "zh", [(1, 0.95), (2, 0.7)], rows, terms, calibration, 0.6
    )
    # A passage in another language never counts, however close; nor one without the terms.
    assert not crosslingual.answered_at_home(
        "zh", [(1, 0.99), (3, 0.9)], rows, terms, calibration, 0.6
    )
    # Without a calibration relevance has no fixed scale: nothing is held back.
    assert not crosslingual.answered_at_home("zh", [(2, 0.9)], rows, terms, None, 0.6)


def test_every_lexical_hit_is_damped_in_a_search_across_languages() -> None:
    # Its own language's hits too: in a mixed collection they match the question's words,
    # and none of them answers when the answer is in another language.
    factors = crosslingual.lexical_damping([(1, 9.0), (2, 5.0), (3, 1.0)], 0.3)
    assert factors == {1: 0.3, 2: 0.3, 3: 0.3}


def test_each_passage_loses_its_languages_share_of_the_score() -> None:
    hits = [(1, 0.90), (2, 0.86), (3, 0.80), (4, 0.70)]
    languages = {1: "zh", 2: "zh", 3: "en", 4: "und"}
    offsets = {"zh": 0.30, "en": 0.15}
    moved = crosslingual.offset(hits, languages, offsets, "zh")
    # The English passage had 0.15 less of "same language" than the Chinese ones; a passage
    # of no measured language is taken as in the question's.
    assert [item for item, _ in moved] == [3, 1, 2, 4]
    assert [score for _, score in moved] == pytest.approx([0.65, 0.60, 0.56, 0.40])


def test_a_languages_offset_is_the_querys_product_with_its_mean() -> None:
    embedder = CountingEmbedder()
    query = embedder.embed_query("backups every night")
    offsets = crosslingual.language_offsets(embedder, query, ["en", "zh", "und", "en"], 0.5)
    assert set(offsets) == {"en", "zh"}
    for language in ("en", "zh"):
        mean = crosslingual.language_mean(embedder, language)
        assert mean is not None
        assert offsets[language] == pytest.approx(0.5 * float(query @ mean))


def test_only_hits_a_sentence_could_lift_into_the_best_are_within_reach() -> None:
    reach = crosslingual.SENTENCE_REACH
    tenth = 0.80
    hits = [(i, 0.9 - i * 0.01) for i in range(9)] + [(9, tenth)]
    hits += [(10, tenth - reach / 2), (11, tenth - 2 * reach)]
    assert crosslingual.within_reach(hits, 20) == list(range(11))
    assert crosslingual.within_reach(hits, 5) == list(range(5))
    assert crosslingual.within_reach(hits[:3], 20) == [0, 1, 2]
    assert crosslingual.within_reach([], 20) == []


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


PASSAGES = {
    1: "The stadium hosted the final. Tickets sold out in an hour. The weather was mild.",
    2: "Denver won the championship game against Carolina by ten points.",
    3: "A short note.",
}


def test_hits_are_scored_by_their_best_sentence_too() -> None:
    embedder = CountingEmbedder()
    query = embedder.embed_query("tickets sold out")
    # 1 holds the answering sentence among two others: whole, it scored lowest.
    dense = [(2, 0.9), (3, 0.8), (1, 0.7), (4, 0.6), (5, 0.5)]
    texts = {item: PASSAGES[item] for item in (1, 2, 3)}
    ranked = dict(crosslingual.by_sentences(dense, texts, query, embedder, 0.7))
    assert max(ranked, key=lambda item: ranked[item]) == 1
    best = {
        item: max(float(query @ v) for v in embedder.embed_documents(sentences(text)))
        for item, text in texts.items()
    }
    assert ranked[1] == pytest.approx(0.3 * 0.7 + 0.7 * best[1])
    # The hits without a text fall short of their score by the median shortfall of the
    # others (one passage with no good sentence does not drag them all down): their order
    # and gaps stay, on the same scale.
    shortfall = float(np.median([score - best[item] for item, score in dense[:3]]))
    assert ranked[4] == pytest.approx(0.6 - 0.7 * shortfall)
    assert ranked[4] - ranked[5] == pytest.approx(0.1)


def test_a_passage_is_scored_by_its_first_sentences_only() -> None:
    embedder = CountingEmbedder()
    table = "\n".join(f"| row {n} | value {n} |" for n in range(100))
    crosslingual.by_sentences([(1, 0.5)], {1: table}, embedder.embed_query("x"), embedder, 0.5)
    assert embedder.encoded == crosslingual.MAX_SENTENCES


def test_sentences_are_embedded_once_per_embedder() -> None:
    embedder = CountingEmbedder()
    query = embedder.embed_query("tickets")
    texts = {item: PASSAGES[item] for item in (1, 2)}
    cache: LRUCache[Vectors] = LRUCache(100)  # the application's SearchCaches hold one
    crosslingual.by_sentences([(1, 0.5), (2, 0.4)], texts, query, embedder, 0.5, cache)
    assert embedder.encoded == 4  # 3 sentences of 1, the one of 2
    crosslingual.by_sentences([(2, 0.5), (1, 0.4)], texts, query, embedder, 0.5, cache)
    assert embedder.encoded == 4


def test_without_texts_nothing_is_re_scored() -> None:
    embedder = CountingEmbedder()
    dense = [(1, 0.9), (2, 0.8)]
    assert crosslingual.by_sentences(dense, {}, embedder.embed_query("x"), embedder, 0.7) == dense
    assert embedder.encoded == 0
