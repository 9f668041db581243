"""The store contract, part three: both search legs, their filters, order and Unicode.

Results are compared by chunk id and text, never by row id, because backends number rows
their own way.
"""

from __future__ import annotations

import numpy as np
import pytest

from knowhub.lang import query_tokens
from knowhub.models import Filters
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import Store
from knowhub.testing.store_contract.base import (
    NO_FILTERS,
    StoreFixtures,
    lexical,
    non_increasing,
    resolved,
    texts,
)
from knowhub.testing.store_data import (
    DIM,
    axis,
    make_doc,
    new_collection,
    normalised,
    put,
    unit_vectors,
)

__all__ = ["SearchContract"]


CHINESE = "知识库支持中文检索。机器学习模型把文档切分成段落，再建立索引。📚"


RUSSIAN = "Быстрая рыжая лиса прыгает через ленивую собаку; ёжик и «кавычки» — тоже."


MIXED = "Café e\u0301 naïve — ﬁle ＡＢＣ１２３ 한국어 日本語のテキスト"


def _needle_in_haystack(store: Store) -> tuple[int, Vectors, str]:
    """200 chunks that beat one rare chunk in both legs; only the rare one is tagged rare.

    Returns the collection, a query vector and the rare chunk's id.
    """
    cid = new_collection(store)
    query = axis(0)
    near = normalised(np.tile(axis(0), (200, 1)) + 0.05 * unit_vectors(200, seed=5))
    put(
        store,
        cid,
        make_doc(
            "haystack.md",
            [f"widget widget widget item {i}" for i in range(200)],
            vectors=near,
            metadata={"team": "core"},
        ),
    )
    rare = put(
        store,
        cid,
        make_doc(
            "needle.md",
            ["a long paragraph that mentions a widget only once among many other words"],
            vectors=normalised(axis(0) + 3 * axis(1)),
            metadata={"team": "rare"},
        ),
    )
    return cid, query, rare.chunks[0].chunk_id


def _both_legs(store: Store, cid: int, filters: Filters) -> tuple[set[str], set[str]]:
    """Texts each leg finds for the shared term / a query every vector is close to."""
    query = normalised(np.ones(DIM))[0]
    return (
        set(texts(store, lexical(store, cid, "shared", filters=filters))),
        set(texts(store, store.dense_search(cid, query, 50, filters))),
    )


class SearchContract(StoreFixtures):
    """Searches: filters before the limit, score order, Unicode text and terms."""

    # -- filters -----------------------------------------------------------------------

    def test_lexical_filters_apply_before_the_limit(self, store: Store) -> None:
        cid, _, needle = _needle_in_haystack(store)
        unfiltered = resolved(store, lexical(store, cid, "widget", limit=5))
        assert needle not in {h.chunk_id for h in unfiltered}, "set-up: the needle must rank low"

        found = resolved(store, lexical(store, cid, "widget", limit=5, filters={"team": "rare"}))
        assert [h.chunk_id for h in found] == [needle]

    def test_dense_filters_apply_before_the_limit(self, store: Store) -> None:
        cid, query, needle = _needle_in_haystack(store)
        unfiltered = resolved(store, store.dense_search(cid, query, 5, NO_FILTERS))
        assert needle not in {h.chunk_id for h in unfiltered}, "set-up: the needle must rank low"

        found = resolved(store, store.dense_search(cid, query, 5, {"team": "rare"}))
        assert [h.chunk_id for h in found] == [needle]

    def test_a_tuple_filter_matches_any_of_its_values(self, store: Store) -> None:
        cid = new_collection(store)
        for i, team in enumerate(("red", "green", "blue")):
            put(
                store,
                cid,
                make_doc(f"{team}.md", [f"shared {team}"], metadata={"team": team}, seed=i),
            )

        lexical_found, dense_found = _both_legs(store, cid, {"team": ("red", "blue", "absent")})
        assert lexical_found == dense_found == {"shared red", "shared blue"}
        assert _both_legs(store, cid, {"team": "green"}) == ({"shared green"}, {"shared green"})
        assert _both_legs(store, cid, {"team": ("absent",)}) == (set(), set())

    def test_a_list_in_chunk_metadata_matches_any_of_its_elements(self, store: Store) -> None:
        cid = new_collection(store)
        put(
            store,
            cid,
            make_doc(
                "labels.md",
                ["shared one", "shared two", "shared three"],
                chunk_metadata=[{"labels": ["x", "y"]}, {"labels": ["y"]}, {"labels": ["z"]}],
            ),
        )
        assert _both_legs(store, cid, {"labels": "y"}) == (
            {"shared one", "shared two"},
            {"shared one", "shared two"},
        )
        assert _both_legs(store, cid, {"labels": ("x", "z")}) == (
            {"shared one", "shared three"},
            {"shared one", "shared three"},
        )
        assert _both_legs(store, cid, {"labels": "w"}) == (set(), set())
        assert _both_legs(store, cid, {"missing-key": "y"}) == (set(), set())

    def test_language_source_and_format_filters_read_the_columns(self, store: Store) -> None:
        cid = new_collection(store)
        en = "shared English words about storage"
        ru = "shared текст о хранилище данных и поиске по документам"
        zh = "shared 知识库支持中文检索和机器学习模型"
        put(store, cid, make_doc("en.md", [en], seed=1))
        put(store, cid, make_doc("ru.pdf", [ru], fmt="pdf", seed=2))
        put(store, cid, make_doc("zh.docx", [zh], fmt="docx", seed=3))

        def both(filters: Filters) -> set[str]:
            lexical_found, dense_found = _both_legs(store, cid, filters)
            assert lexical_found == dense_found, filters
            return lexical_found

        assert both({}) == {en, ru, zh}
        assert both({"language": "ru"}) == {ru}
        assert both({"language": ("zh", "en")}) == {zh, en}
        assert both({"source": "ru.pdf"}) == {ru}
        assert both({"format": ("docx", "markdown")}) == {zh, en}
        assert both({"format": "pdf", "language": "ru"}) == {ru}
        assert both({"format": "pdf", "language": "en"}) == set(), "filters must be ANDed"

    # -- score ordering ----------------------------------------------------------------

    def test_dense_search_ranks_the_identical_vector_first_by_cosine(self, store: Store) -> None:
        cid = new_collection(store)
        doc = put(store, cid, make_doc("v.md", [f"chunk {i}" for i in range(40)], seed=7))
        target = 17
        results = store.dense_search(cid, doc.vectors[target], 10, NO_FILTERS)
        assert len(results) == 10
        assert texts(store, results)[0] == f"chunk {target}"
        assert results[0][1] == pytest.approx(1.0, abs=1e-5)
        assert non_increasing(results)
        expected = np.sort(doc.vectors @ doc.vectors[target])[::-1][:10]
        np.testing.assert_allclose([s for _, s in results], expected, atol=1e-5)

    def test_lexical_search_ranks_more_matching_terms_higher(self, store: Store) -> None:
        cid = new_collection(store)
        filler = [f"filler paragraph number {i} with plain words" for i in range(20)]
        # Equal lengths, so only the number of matching terms separates the three.
        three = "apple banana cherry plain words here"
        two = "apple banana plain words here more"
        one = "apple plain words here more again"
        put(store, cid, make_doc("fruit.md", [one, *filler, three, two], seed=3))
        results = lexical(store, cid, "apple banana cherry")
        assert texts(store, results) == [three, two, one]
        assert non_increasing(results)
        assert results[0][1] > results[1][1] > results[2][1]

    # -- unicode -----------------------------------------------------------------------

    def test_unicode_text_and_metadata_round_trip_exactly(self, store: Store) -> None:
        cid = new_collection(store)
        doc = put(
            store,
            cid,
            make_doc(
                "文档/документ.md",
                [CHINESE, RUSSIAN, MIXED],
                title="知识 — Знание",
                section_path="第一章 > Глава 1",
                metadata={"作者": "李华", "автор": "Иван"},
                seed=4,
            ),
        )
        rows = store.hits(list(store.chunk_sources(cid)))
        by_chunk = {hit.chunk_id: hit for hit in rows.values()}
        for chunk in doc.chunks:
            hit = by_chunk[chunk.chunk_id]
            assert hit.text == chunk.text
            assert hit.section_path == chunk.section_path
            assert hit.metadata == chunk.metadata
            assert hit.language == chunk.language
            assert (hit.source, hit.title) == ("文档/документ.md", "知识 — Знание")
            assert (hit.char_start, hit.char_end) == (chunk.char_start, chunk.char_end)
        assert [by_chunk[c.chunk_id].language for c in doc.chunks][:2] == ["zh", "ru"]
        assert store.record(cid, doc.path) == doc.record
        assert store.find_records(cid, "文档/документ.md") == [doc.record]

    def test_lexical_search_finds_chinese_and_russian_by_their_own_terms(
        self, store: Store
    ) -> None:
        cid = new_collection(store)
        put(store, cid, make_doc("zh.md", [CHINESE], seed=1))
        put(store, cid, make_doc("ru.md", [RUSSIAN], seed=2))
        put(store, cid, make_doc("en.md", ["machine learning splits documents"], seed=3))

        assert query_tokens("机器学习") == ["机器", "学习"]  # jieba segments the query
        assert texts(store, lexical(store, cid, "机器学习")) == [CHINESE]
        # Another inflection of the same words: Snowball stems both sides alike.
        assert texts(store, lexical(store, cid, "лисы прыгали")) == [RUSSIAN]
        assert texts(store, lexical(store, cid, "ежик")) == [RUSSIAN], "ё and е must match"
        assert texts(store, lexical(store, cid, "собака", filters={"language": "ru"})) == [RUSSIAN]
