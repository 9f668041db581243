"""The store contract (providers/stores/base.py), checked against every backend.

Each test states one promise the pipelines rely on. Results are compared by chunk id,
text and document hash, never by row id, because backends number rows their own way
(and SQLite even reuses the ids a replaced document freed).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from knowhub.errors import StoreError
from knowhub.lang import query_tokens
from knowhub.models import Filters, Hit
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import DocumentWrite, Store, replace_documents
from tests.contract.conftest import (
    DIM,
    EMBEDDER,
    Doc,
    Opener,
    assert_whole,
    axis,
    make_doc,
    new_collection,
    normalised,
    put,
    unit_vectors,
)

NO_FILTERS: Filters = {}


def lexical(
    store: Store, cid: int, query: str, limit: int = 50, filters: Filters = NO_FILTERS
) -> list[tuple[int, float]]:
    return store.lexical_search(cid, query_tokens(query), limit, filters)


def resolved(store: Store, results: Sequence[tuple[int, float]]) -> list[Hit]:
    """The hits of search results, in result order (every id must resolve)."""
    rows = store.hits([rowid for rowid, _ in results])
    assert set(rows) == {rowid for rowid, _ in results}, "a search returned an unknown row id"
    return [rows[rowid] for rowid, _ in results]


def texts(store: Store, results: Sequence[tuple[int, float]]) -> list[str]:
    return [hit.text for hit in resolved(store, results)]


def sources(store: Store, results: Sequence[tuple[int, float]]) -> set[str]:
    return {hit.source for hit in resolved(store, results)}


def non_increasing(results: Sequence[tuple[int, float]]) -> bool:
    scores = [score for _, score in results]
    return all(a >= b for a, b in itertools.pairwise(scores))


# -- collections ---------------------------------------------------------------------


def test_ensure_collection_is_idempotent_and_refuses_another_embedder(store: Store) -> None:
    cid = new_collection(store, "docs")
    assert store.ensure_collection("docs", EMBEDDER, DIM) == cid
    assert store.collection_id("docs") == cid
    assert store.collection_id("no-such-collection") is None
    assert store.embedder_of(cid) == (EMBEDDER, DIM)

    with pytest.raises(StoreError) as refused:
        store.ensure_collection("docs", "other/embedder", DIM)
    assert EMBEDDER in str(refused.value)
    assert "other/embedder" in str(refused.value)

    other = store.ensure_collection("notes", "other/embedder", 8)
    assert other != cid
    assert store.embedder_of(other) == ("other/embedder", 8)
    assert store.embedder_of(cid) == (EMBEDDER, DIM), "a second collection changed the first"


def test_collections_count_documents_and_chunks_and_version_moves_on_writes(
    store: Store,
) -> None:
    cid = new_collection(store, "docs")
    notes = new_collection(store, "notes")
    info = {c.name: c for c in store.collections()}
    assert set(info) == {"docs", "notes"}
    empty = info["docs"]
    assert (empty.embedder, empty.dim) == (EMBEDDER, DIM)
    assert (empty.documents, empty.chunks, empty.lexical_chunks) == (0, 0, 0)
    assert empty.created_at
    assert store.version(cid) == empty.version

    put(store, cid, make_doc("a.md", ["one", "two", "three"], seed=1))
    put(store, cid, make_doc("b.md", ["four", "five"], seed=2))
    after_put = {c.name: c for c in store.collections()}["docs"]
    assert (after_put.documents, after_put.chunks, after_put.lexical_chunks) == (2, 5, 5)
    assert after_put.version > empty.version
    assert store.version(cid) == after_put.version

    notes_before = store.version(notes)
    put(store, notes, make_doc("n.md", ["note"], collection="notes", seed=3))
    assert store.version(cid) == after_put.version, "a write to notes moved docs' version"
    assert store.version(notes) > notes_before

    assert store.remove_document(cid, "/corpus/a.md")
    after_remove = {c.name: c for c in store.collections()}["docs"]
    assert (after_remove.documents, after_remove.chunks, after_remove.lexical_chunks) == (1, 2, 2)
    assert after_remove.version > after_put.version
    assert_whole(store)


def test_records_round_trip_and_are_found_by_path_source_or_hash(store: Store) -> None:
    cid = new_collection(store)
    a = put(store, cid, make_doc("guide/a.md", ["alpha"], metadata={"team": "core"}, seed=1))
    b = put(store, cid, make_doc("b.pdf", ["beta"], fmt="pdf", seed=2))

    assert store.record(cid, a.path) == a.record
    assert store.record(cid, "/corpus/missing.md") is None
    assert sorted(r.source for r in store.records(cid)) == ["b.pdf", "guide/a.md"]
    assert store.find_records(cid, b.path) == [b.record]
    assert store.find_records(cid, "b.pdf") == [b.record]
    assert store.find_records(cid, a.record.doc_hash) == [], "a hash is not a path"
    assert store.find_by_hash_prefix(cid, a.record.doc_hash[:12]) == [a.record]
    assert store.find_by_hash_prefix(cid, a.record.doc_hash) == [a.record]
    assert store.find_records(cid, "nothing-like-this") == []

    store.touch(cid, a.path, size=4242, mtime_ns=99)
    touched = store.record(cid, a.path)
    assert touched is not None
    assert (touched.size, touched.mtime_ns) == (4242, 99)
    assert touched.doc_hash == a.record.doc_hash


def test_wildcard_characters_never_match_by_pattern(store: Store) -> None:
    # `knowhub remove '________'` once removed every document: the prefix went into LIKE.
    cid = new_collection(store)
    docs = [put(store, cid, make_doc(f"doc{i}.md", [f"text {i}"], seed=i)) for i in range(4)]
    odd = put(store, cid, make_doc("odd_name%[x]*?.md", ["odd"], seed=9))
    h = docs[0].record.doc_hash
    patterns = [
        "_",
        "%",
        "\\",
        "[",
        "*",
        "?",
        "________",
        "a%%%%%%%",
        "%%%%%%%%",
        "********",
        "[0-9a-f]*",
        "\\%",
        "%_",
        f"{h[:7]}_",
        f"{h[:7]}?",
        f"{h[:4]}%",
        f"{h[:4]}*",
        f"[{h[0]}]{h[1:8]}",
        f"{h[:6]}\\{h[6:8]}",
        f"{h[:4]}%{h[6:8]}",
    ]
    for pattern in patterns:
        assert store.find_records(cid, pattern) == [], f"path {pattern!r} matched"
        assert store.find_by_hash_prefix(cid, pattern) == [], f"prefix {pattern!r} matched"
    near_misses = ["odd_name%[x]*?.m_", "odd%", "odd_name_[x]*?.md", "/corpus/odd*", "odd?na*"]
    for near in near_misses:
        assert store.find_records(cid, near) == [], f"source {near!r} matched by pattern"
    assert store.find_records(cid, "odd_name%[x]*?.md") == [odd.record]
    assert store.find_records(cid, odd.path) == [odd.record]
    assert store.find_by_hash_prefix(cid, h[:8]) == [docs[0].record]
    assert store.find_by_hash_prefix(cid, h[:8].upper()) == [], "hashes are lower case hex"
    assert store.find_by_hash_prefix(cid, "") == [], "an empty prefix matches nothing"
    assert len(store.records(cid)) == 5


# -- atomic replace and delete ---------------------------------------------------------


def test_replacing_a_document_with_fewer_chunks_leaves_nothing_of_the_old_one(
    store: Store,
) -> None:
    cid = new_collection(store)
    put(store, cid, make_doc("other.md", ["an unrelated text about horses"], seed=9))
    old = put(store, cid, make_doc("z.md", [f"zebra number {i}" for i in range(5)], seed=1))
    old_lexical = lexical(store, cid, "zebra")
    old_dense = store.dense_search(cid, old.vectors[4], 50, NO_FILTERS)
    assert {h.chunk_id for h in resolved(store, old_lexical)} == {c.chunk_id for c in old.chunks}

    new = put(
        store,
        cid,
        make_doc("z.md", ["zebra again", "zebra at last"], seed=2, revision=1),
    )
    old_ids = {c.chunk_id for c in old.chunks}
    new_ids = {c.chunk_id for c in new.chunks}
    assert not old_ids & new_ids

    # Stale row ids from before the write never resolve to an old chunk.
    stale = store.hits([rowid for rowid, _ in old_lexical + old_dense])
    assert not {hit.chunk_id for hit in stale.values()} & old_ids

    assert {h.chunk_id for h in resolved(store, lexical(store, cid, "zebra"))} == new_ids
    dense = store.dense_search(cid, old.vectors[4], 50, {"source": "z.md"})
    assert {h.chunk_id for h in resolved(store, dense)} == new_ids
    dense_all = store.dense_search(cid, old.vectors[4], 50, NO_FILTERS)
    assert len(dense_all) == 3, "old vectors are still searchable"

    for chunk in old.chunks:
        assert store.chunks_by_id(chunk.chunk_id) == []
    [found] = store.chunks_by_id(new.chunks[1].chunk_id)
    assert (found.text, found.doc_hash) == ("zebra at last", new.record.doc_hash)

    record = store.record(cid, new.path)
    assert record is not None
    assert (record.doc_hash, record.chunk_count) == (new.record.doc_hash, 2)
    assert len(store.records(cid)) == 2
    [info] = store.collections()
    assert (info.documents, info.chunks, info.lexical_chunks) == (2, 3, 3)
    assert sorted(store.chunk_sources(cid).values()) == ["other.md", "z.md", "z.md"]
    assert_whole(store)


def test_a_failed_replace_changes_nothing(store: Store) -> None:
    cid = new_collection(store)
    doc = put(store, cid, make_doc("a.md", ["kept text"], seed=1))
    version = store.version(cid)
    broken = make_doc("a.md", ["new text", "more"], seed=2, revision=1)
    with pytest.raises(StoreError):
        # One token string short: the store must refuse before touching anything.
        store.replace_document(
            cid, broken.record, broken.chunks, broken.vectors, broken.tokens[:1], broken.cache_keys
        )
    assert store.record(cid, doc.path) == doc.record
    assert texts(store, lexical(store, cid, "kept")) == ["kept text"]
    assert store.version(cid) == version
    assert_whole(store)


def test_replace_document_with_previous_moves_the_document_in_one_write(store: Store) -> None:
    cid = new_collection(store)
    old = put(store, cid, make_doc("notes/a.md", ["moved words here"], seed=1, doc_id="9" * 16))
    bystander = put(store, cid, make_doc("b.md", ["unrelated text"], seed=2))
    moved = dataclasses.replace(old.record, path="/corpus/Notes/a.md", source="Notes/a.md")
    version = store.version(cid)

    store.replace_document(
        cid, moved, old.chunks, old.vectors, old.tokens, old.cache_keys, previous=old.path
    )
    assert store.version(cid) > version
    assert sorted(r.path for r in store.records(cid)) == sorted([bystander.path, moved.path])
    assert store.record(cid, old.path) is None
    assert sources(store, lexical(store, cid, "moved words")) == {"Notes/a.md"}
    assert sources(store, lexical(store, cid, "moved", filters={"source": "Notes/a.md"})) == {
        "Notes/a.md"
    }
    assert sources(store, store.dense_search(cid, old.vectors[0], 1, NO_FILTERS)) == {"Notes/a.md"}
    assert [h.source for h in store.chunks_by_id(old.chunks[0].chunk_id)] == ["Notes/a.md"]
    [info] = store.collections()
    assert (info.documents, info.chunks, info.lexical_chunks) == (2, 2, 2)
    assert_whole(store)


def test_a_group_of_writes_keeps_each_document_whole_and_skips_a_bad_one(store: Store) -> None:
    # Ingest writes documents in groups (one commit where the backend can): every document
    # reaches both legs, and a write the store refuses leaves the others written.
    cid = new_collection(store)
    docs = [make_doc(f"g{n}.md", [f"group word{n} text"], seed=n) for n in range(3)]
    writes = [DocumentWrite(d.record, d.chunks, d.vectors, d.tokens, d.cache_keys) for d in docs]
    writes[1] = dataclasses.replace(writes[1], vectors=writes[1].vectors[:, :3])  # wrong dim
    errors = replace_documents(store, cid, writes)
    assert errors[0] is None and errors[2] is None and isinstance(errors[1], StoreError)
    assert sorted(r.source for r in store.records(cid)) == ["g0.md", "g2.md"]
    assert sources(store, lexical(store, cid, "word2")) == {"g2.md"}
    assert sources(store, store.dense_search(cid, docs[0].vectors[0], 1, NO_FILTERS)) == {"g0.md"}
    assert_whole(store)


def test_remove_document_removes_it_from_both_legs_and_records(store: Store) -> None:
    cid = new_collection(store)
    keep = put(store, cid, make_doc("keep.md", ["shared words kept"], seed=1))
    gone = put(store, cid, make_doc("gone.md", ["shared words gone", "more gone"], seed=2))
    version = store.version(cid)

    assert store.remove_document(cid, gone.path) is True
    assert store.version(cid) > version
    assert sources(store, lexical(store, cid, "shared words")) == {"keep.md"}
    assert sources(store, store.dense_search(cid, gone.vectors[0], 50, NO_FILTERS)) == {"keep.md"}
    assert [r.source for r in store.records(cid)] == ["keep.md"]
    assert store.record(cid, gone.path) is None
    assert store.chunks_by_id(gone.chunks[0].chunk_id) == []
    assert store.remove_document(cid, gone.path) is False
    assert store.remove_document(cid, "/corpus/never-there.md") is False
    assert store.record(cid, keep.path) == keep.record
    assert_whole(store)


# -- filters -------------------------------------------------------------------------


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


def test_lexical_filters_apply_before_the_limit(store: Store) -> None:
    cid, _, needle = _needle_in_haystack(store)
    unfiltered = resolved(store, lexical(store, cid, "widget", limit=5))
    assert needle not in {h.chunk_id for h in unfiltered}, "set-up: the needle must rank low"

    found = resolved(store, lexical(store, cid, "widget", limit=5, filters={"team": "rare"}))
    assert [h.chunk_id for h in found] == [needle]


def test_dense_filters_apply_before_the_limit(store: Store) -> None:
    cid, query, needle = _needle_in_haystack(store)
    unfiltered = resolved(store, store.dense_search(cid, query, 5, NO_FILTERS))
    assert needle not in {h.chunk_id for h in unfiltered}, "set-up: the needle must rank low"

    found = resolved(store, store.dense_search(cid, query, 5, {"team": "rare"}))
    assert [h.chunk_id for h in found] == [needle]


def _both_legs(store: Store, cid: int, filters: Filters) -> tuple[set[str], set[str]]:
    """Texts each leg finds for the shared term / a query every vector is close to."""
    query = normalised(np.ones(DIM))[0]
    return (
        set(texts(store, lexical(store, cid, "shared", filters=filters))),
        set(texts(store, store.dense_search(cid, query, 50, filters))),
    )


def test_a_tuple_filter_matches_any_of_its_values(store: Store) -> None:
    cid = new_collection(store)
    for i, team in enumerate(("red", "green", "blue")):
        put(store, cid, make_doc(f"{team}.md", [f"shared {team}"], metadata={"team": team}, seed=i))

    lexical_found, dense_found = _both_legs(store, cid, {"team": ("red", "blue", "absent")})
    assert lexical_found == dense_found == {"shared red", "shared blue"}
    assert _both_legs(store, cid, {"team": "green"}) == ({"shared green"}, {"shared green"})
    assert _both_legs(store, cid, {"team": ("absent",)}) == (set(), set())


def test_a_list_in_chunk_metadata_matches_any_of_its_elements(store: Store) -> None:
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


def test_language_source_and_format_filters_read_the_columns(store: Store) -> None:
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


# -- score ordering ------------------------------------------------------------------


def test_dense_search_ranks_the_identical_vector_first_by_cosine(store: Store) -> None:
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


def test_lexical_search_ranks_more_matching_terms_higher(store: Store) -> None:
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


# -- unicode -------------------------------------------------------------------------

CHINESE = "知识库支持中文检索。机器学习模型把文档切分成段落，再建立索引。📚"
RUSSIAN = "Быстрая рыжая лиса прыгает через ленивую собаку; ёжик и «кавычки» — тоже."
MIXED = "Café e\u0301 naïve — ﬁle ＡＢＣ１２３ 한국어 日本語のテキスト"


def test_unicode_text_and_metadata_round_trip_exactly(store: Store) -> None:
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


def test_lexical_search_finds_chinese_and_russian_by_their_own_terms(store: Store) -> None:
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


# -- large batches -------------------------------------------------------------------


def test_a_document_of_2000_chunks(store: Store) -> None:
    cid = new_collection(store)
    n = 2000
    doc = put(
        store,
        cid,
        make_doc("big.md", [f"passage marker{i} topic{i % 7}" for i in range(n)], seed=11),
    )
    [info] = store.collections()
    assert (info.documents, info.chunks, info.lexical_chunks) == (1, n, n)
    record = store.record(cid, doc.path)
    assert record is not None
    assert record.chunk_count == n

    rows = store.hits(list(store.chunk_sources(cid)))
    assert sorted(hit.chunk_id for hit in rows.values()) == sorted(c.chunk_id for c in doc.chunks)

    [top] = resolved(store, lexical(store, cid, "marker1234", limit=1))
    assert top.text == "passage marker1234 topic2"
    assert len(lexical(store, cid, "topic3", limit=n)) == len(range(3, n, 7))
    best = resolved(store, store.dense_search(cid, doc.vectors[1999], 3, NO_FILTERS))
    assert best[0].text == "passage marker1999 topic4"

    cached = store.cached_vectors(doc.cache_keys)
    assert len(cached) == n
    np.testing.assert_array_equal(cached[doc.cache_keys[1500]], doc.vectors[1500])
    assert_whole(store)


def test_300_documents(store: Store) -> None:
    cid = new_collection(store)
    docs = [
        put(
            store,
            cid,
            make_doc(f"d{i:03d}.md", [f"doc{i} first", f"doc{i} second", "common"], seed=i),
        )
        for i in range(300)
    ]
    [info] = store.collections()
    assert (info.documents, info.chunks, info.lexical_chunks) == (300, 900, 900)
    assert len(store.records(cid)) == 300

    assert texts(store, lexical(store, cid, "doc217", limit=5)) == ["doc217 first", "doc217 second"]
    hits = resolved(store, store.dense_search(cid, docs[123].vectors[1], 1, NO_FILTERS))
    assert hits[0].text == "doc123 second"
    only = texts(store, store.dense_search(cid, docs[0].vectors[0], 50, {"source": "d250.md"}))
    assert sorted(only) == ["common", "doc250 first", "doc250 second"]

    for doc in docs[:100]:
        assert store.remove_document(cid, doc.path)
    [info] = store.collections()
    assert (info.documents, info.chunks, info.lexical_chunks) == (200, 600, 600)
    assert len(lexical(store, cid, "common", limit=1000)) == 200
    assert lexical(store, cid, "doc42") == []
    assert_whole(store)


# -- concurrency ---------------------------------------------------------------------


def test_concurrent_readers_never_see_a_mix_of_two_versions(opener: Opener) -> None:
    """Readers on their own connections search while a writer swaps one document.

    Version "alpha" has 3 chunks on axis 0, "beta" 5 chunks on axis 1; the query vector
    scores them 0.8 and 0.6, so a result holding both, or neither, is a torn read.
    """
    writer = opener()
    cid = new_collection(writer)
    rng = np.random.default_rng(0)
    for i in range(20):  # bystanders, orthogonal to both versions
        background = np.zeros((3, DIM))
        background[:, 2:] = rng.standard_normal((3, DIM - 2))
        put(
            writer,
            cid,
            make_doc(f"static{i}.md", ["static text"] * 3, vectors=normalised(background)),
        )

    def version(revision: int) -> Doc:
        n, word, direction = (3, "alpha", 0) if revision % 2 == 0 else (5, "beta", 1)
        paragraphs = [f"live {word} chunk {i} r{revision}" for i in range(n)]
        return make_doc(
            "live.md", paragraphs, vectors=np.tile(axis(direction), (n, 1)), revision=revision
        )

    put(writer, cid, version(0))
    query = normalised(0.8 * axis(0) + 0.6 * axis(1))[0]
    expected = {3: (0.8, "alpha"), 5: (0.6, "beta")}
    readers = [opener() for _ in range(3)]
    writing = threading.Event()
    done = threading.Event()
    failures: list[str] = []
    reads_during_writes = [0] * len(readers)

    def check_dense(results: list[tuple[int, float]], leg: str) -> None:
        scores = [s for _, s in results if s > 0.3]  # the bystanders score 0
        assert len(scores) in expected, f"{leg} dense saw {len(scores)} live chunks: {scores}"
        assert np.allclose(scores, expected[len(scores)][0], atol=1e-4), (leg, scores)

    def check_lexical(reader: Store, results: list[tuple[int, float]]) -> None:
        assert len(results) in expected, f"lexical saw {len(results)} live chunks"
        rows = reader.hits([rowid for rowid, _ in results])
        # hits() may resolve fewer ids (a newer version freed them), never a mixture.
        hashes = {hit.doc_hash for hit in rows.values()}
        assert len(hashes) <= 1, f"hits() mixed versions: {hashes}"
        words = {hit.text.split()[1] for hit in rows.values()}
        assert len(words) <= 1, f"hits() mixed versions: {words}"
        for hit in rows.values():
            assert hit.chunk_id.startswith(hit.doc_hash[:16])

    def read(index: int, reader: Store) -> None:
        terms = query_tokens("live")
        while not done.is_set():
            try:
                check_lexical(reader, reader.lexical_search(cid, terms, 50, NO_FILTERS))
                check_lexical(reader, reader.lexical_search(cid, terms, 50, {"source": "live.md"}))
                check_dense(reader.dense_search(cid, query, 50, NO_FILTERS), "unfiltered")
                check_dense(reader.dense_search(cid, query, 50, {"source": "live.md"}), "filtered")
            except BaseException as exc:  # reported in the main thread, never lost
                failures.append(f"reader {index}: {type(exc).__name__}: {exc}")
                return
            if writing.is_set():
                reads_during_writes[index] += 1

    threads = [threading.Thread(target=read, args=(i, r)) for i, r in enumerate(readers)]
    for thread in threads:
        thread.start()
    try:
        writing.set()
        for revision in range(1, 301):
            put(writer, cid, version(revision))
            if failures:
                break
    finally:
        writing.clear()
        done.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not failures, failures[:5]
    assert all(n > 5 for n in reads_during_writes), f"readers barely ran: {reads_during_writes}"
    final = writer.record(cid, "/corpus/live.md")
    assert final is not None
    assert final.doc_hash == version(300).record.doc_hash
    assert_whole(writer)


# -- dimensions ----------------------------------------------------------------------


def test_vectors_of_another_dimension_are_refused(store: Store) -> None:
    cid = new_collection(store)
    with pytest.raises(StoreError) as refused:
        store.ensure_collection("docs", EMBEDDER, DIM * 2)
    assert str(DIM) in str(refused.value)
    assert str(DIM * 2) in str(refused.value)

    kept = put(store, cid, make_doc("a.md", ["kept text"], seed=1))
    version = store.version(cid)
    wrong = make_doc("a.md", ["wrong size", "vectors"], vectors=unit_vectors(2, 3, dim=DIM + 8))
    with pytest.raises(StoreError) as wrong_dim:
        put(store, cid, wrong)
    message = str(wrong_dim.value)
    assert str(DIM) in message
    assert str(DIM + 8) in message
    assert store.record(cid, kept.path) == kept.record, "a refused write changed the document"
    assert store.version(cid) == version
    # Dense search still works: nothing of the wrong size reached the vectors.
    assert texts(store, store.dense_search(cid, kept.vectors[0], 5, NO_FILTERS)) == ["kept text"]
    assert_whole(store)


# -- reopen and close ----------------------------------------------------------------


def test_everything_persists_after_close_and_reopen(opener: Opener) -> None:
    first = opener()
    cid = new_collection(first, "docs")
    doc = put(first, cid, make_doc("a.md", ["persisted words", "more words"], seed=1))
    put(first, cid, make_doc("b.md", ["other"], seed=2))
    first.replace_faq(cid, "faq.md", [("Why?", "Because.", 3)], unit_vectors(1, 5))
    info = first.collections()
    version = first.version(cid)
    lexical_before = texts(first, lexical(first, cid, "words"))
    dense_before = texts(first, first.dense_search(cid, doc.vectors[1], 3, NO_FILTERS))
    first.close()

    second = opener()
    assert second.collection_id("docs") == cid
    assert second.collections() == info
    assert second.version(cid) == version
    assert second.embedder_of(cid) == (EMBEDDER, DIM)
    assert second.record(cid, doc.path) == doc.record
    assert texts(second, lexical(second, cid, "words")) == lexical_before
    assert texts(second, second.dense_search(cid, doc.vectors[1], 3, NO_FILTERS)) == dense_before
    assert [(e.question, e.line) for e in second.faq(cid)] == [("Why?", 3)]
    assert set(second.cached_vectors(doc.cache_keys)) == set(doc.cache_keys)

    put(second, cid, make_doc("c.md", ["written after reopening"], seed=3))
    assert second.version(cid) > version
    assert texts(second, lexical(second, cid, "reopening")) == ["written after reopening"]
    assert_whole(second)


def test_a_closed_store_raises_a_clear_error(opener: Opener) -> None:
    store = opener()
    cid = new_collection(store)
    doc = put(store, cid, make_doc("a.md", ["text"], seed=1))
    store.dense_search(cid, doc.vectors[0], 1, NO_FILTERS)  # warm any cache first
    store.close()

    calls: dict[str, Callable[[], object]] = {
        "collections": lambda: store.collections(),
        "records": lambda: store.records(cid),
        "lexical_search": lambda: lexical(store, cid, "text"),
        "dense_search": lambda: store.dense_search(cid, doc.vectors[0], 1, NO_FILTERS),
        "hits": lambda: store.hits([1]),
        "replace_document": lambda: put(store, cid, doc),
    }
    worked: list[str] = []
    for name, call in calls.items():
        try:
            call()
        except Exception as exc:  # each backend has its own error type; the words matter
            assert "closed" in str(exc).lower(), f"{name}: unclear error {exc!r}"
        else:
            worked.append(name)
    assert not worked, f"served from a closed store: {worked}"
    store.close()  # closing twice is harmless


# -- FAQ and embedding cache ---------------------------------------------------------


def test_faq_entries_are_replaced_per_source(store: Store) -> None:
    cid = new_collection(store)
    other = new_collection(store, "other")
    a_vectors = unit_vectors(2, 1)
    store.replace_faq(cid, "b.md", [("Где?", "Здесь.", 7)], unit_vectors(1, 2))
    store.replace_faq(cid, "a.md", [("Second?", "2", 9), ("第一?", "一", 2)], a_vectors)
    store.replace_faq(other, "a.md", [("Elsewhere?", "no", 1)], unit_vectors(1, 3))

    entries = store.faq(cid)
    assert [(e.source, e.line, e.question, e.answer) for e in entries] == [
        ("a.md", 2, "第一?", "一"),
        ("a.md", 9, "Second?", "2"),
        ("b.md", 7, "Где?", "Здесь."),
    ]
    np.testing.assert_array_equal(entries[0].vector, a_vectors[1])

    store.replace_faq(cid, "a.md", [("Only?", "yes", 4)], unit_vectors(1, 4))
    assert [(e.source, e.question) for e in store.faq(cid)] == [("a.md", "Only?"), ("b.md", "Где?")]
    assert store.remove_faq(cid, "b.md") == 1
    assert store.remove_faq(cid, "b.md") == 0
    assert [e.question for e in store.faq(cid)] == ["Only?"]
    assert [e.question for e in store.faq(other)] == ["Elsewhere?"]


def test_cached_vectors_returns_what_replace_document_stored(store: Store) -> None:
    cid = new_collection(store)
    doc = put(store, cid, make_doc("a.md", ["first", "second", "third"], seed=6))
    assert store.cached_vectors([]) == {}
    cached = store.cached_vectors([*doc.cache_keys, "no-such-key"])
    assert set(cached) == set(doc.cache_keys)
    for key, vector in zip(doc.cache_keys, doc.vectors, strict=True):
        assert cached[key].dtype == np.float32
        np.testing.assert_array_equal(cached[key], vector)


# -- integrity -----------------------------------------------------------------------


def test_integrity_holds_after_a_mixed_workload(store: Store) -> None:
    cid = new_collection(store)
    notes = new_collection(store, "notes")
    assert_whole(store)
    for revision in range(4):
        put(store, cid, make_doc("a.md", ["x"] * (4 - revision), seed=revision, revision=revision))
        put(store, notes, make_doc("n.md", ["y"] * (revision + 1), collection="notes", seed=9))
    put(store, cid, make_doc("b.md", ["b"], seed=1))
    store.remove_document(cid, "/corpus/b.md")
    store.remove_document(notes, "/corpus/missing.md")
    store.touch(cid, "/corpus/a.md", 1, 1)
    store.replace_faq(cid, "faq.md", [("q", "a", 1)], unit_vectors(1, 1))
    store.remove_faq(cid, "faq.md")
    assert_whole(store)
    counts = {c.name: (c.documents, c.chunks, c.lexical_chunks) for c in store.collections()}
    assert counts == {"docs": (1, 1, 1), "notes": (1, 4, 4)}


# -- verify and export read each leg -------------------------------------------------------


def test_stored_chunks_give_back_each_chunk_with_its_vector_and_tokens(store: Store) -> None:
    cid = new_collection(store)
    notes = new_collection(store, "notes")
    texts = ["first part", "second part", "third part"]
    doc = make_doc("a.md", texts, metadata={"team": "core"}, section_path="A > B", seed=4)
    put(store, cid, doc)
    put(store, notes, make_doc("a.md", ["elsewhere"], collection="notes", seed=5))

    stored = store.stored_chunks(cid, doc.path)
    assert [s.chunk for s in stored] == doc.chunks, "every Chunk field, in index order"
    assert [s.tokens for s in stored] == doc.tokens
    for item, vector in zip(stored, doc.vectors, strict=True):
        assert item.vector is not None
        np.testing.assert_array_equal(np.asarray(item.vector, dtype=np.float32), vector)
    assert store.stored_chunks(cid, "/corpus/missing.md") == []

    store.remove_document(cid, doc.path)
    assert store.stored_chunks(cid, doc.path) == []
    assert [s.chunk.text for s in store.stored_chunks(notes, doc.path)] == ["elsewhere"]


def test_a_whole_store_has_no_orphans_to_remove(store: Store) -> None:
    cid = new_collection(store)
    assert store.orphans(cid) == []
    for revision in range(3):
        put(store, cid, make_doc("a.md", ["x"] * (3 - revision), seed=revision, revision=revision))
    put(store, cid, make_doc("b.md", ["b", "c"], seed=1))
    store.remove_document(cid, "/corpus/b.md")
    version = store.version(cid)
    assert store.orphans(cid) == []
    assert store.remove_orphans(cid) == 0
    assert store.version(cid) == version, "removing nothing is no write"
    assert_whole(store)


# -- dropping a collection ---------------------------------------------------------------


def test_drop_collection_removes_it_whole_and_leaves_the_others(opener: Opener) -> None:
    store = opener()
    keep = new_collection(store, "keep")
    gone = new_collection(store, "gone")
    kept = put(store, keep, make_doc("k.md", ["kept words here"], collection="keep", seed=1))
    dropped = put(store, gone, make_doc("g.md", ["dropped words", "more"], collection="gone"))
    store.replace_faq(gone, "faq.md", [("Why?", "Because.", 1)], unit_vectors(1, 5))
    old_rows = [rowid for rowid, _ in lexical(store, gone, "dropped words")]
    assert old_rows

    store.drop_collection(gone)
    store.drop_collection(gone)  # an unknown id is ignored
    assert store.collection_id("gone") is None
    assert [c.name for c in store.collections()] == ["keep"]
    assert store.chunks_by_id(dropped.chunks[0].chunk_id) == []
    assert store.hits(old_rows) == {}
    assert texts(store, lexical(store, keep, "words")) == ["kept words here"]
    assert texts(store, store.dense_search(keep, kept.vectors[0], 5, NO_FILTERS)) == [
        "kept words here"
    ]
    assert_whole(store)

    # The name is free again, for any embedder, under an id never used before.
    again = store.ensure_collection("gone", "other/embedder", 8)
    assert again not in (keep, gone)
    assert store.records(again) == [] and store.faq(again) == []
    assert lexical(store, again, "dropped words") == []
    store.close()
    assert opener().collection_id("gone") == again


# -- metadata ----------------------------------------------------------------------------


def test_meta_values_change_only_by_compare_and_set(opener: Opener) -> None:
    store = opener()
    key = "versions:docs"
    assert store.get_meta(key) is None
    assert store.set_meta(key, "one", None)
    assert not store.set_meta(key, "two", None), "the key is no longer absent"
    assert not store.set_meta(key, "two", "stale")
    assert store.get_meta(key) == "one"
    assert store.set_meta(key, "двa ✓", "one")
    assert opener().get_meta(key) == "двa ✓", "another connection sees the committed value"
    assert not store.set_meta(key, None, "one")
    assert store.set_meta(key, None, "двa ✓")
    assert store.get_meta(key) is None
    assert store.set_meta(key, None, None), "deleting an absent key, expecting absence"
    with pytest.raises(StoreError, match="namespace"):
        store.set_meta("schema_version", "0", None)
    store.close()
    assert opener().get_meta(key) is None


def test_concurrent_compare_and_set_loses_no_update(opener: Opener) -> None:
    key, writers, rounds = "test:counter", 4, 15
    stores = [opener() for _ in range(writers)]
    errors: list[BaseException] = []

    def increment(store: Store) -> None:
        try:
            for _ in range(rounds):
                while True:
                    seen = store.get_meta(key)
                    if store.set_meta(key, str(int(seen or 0) + 1), seen):
                        break
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=increment, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert stores[0].get_meta(key) == str(writers * rounds)
