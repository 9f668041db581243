"""The store contract, part four: large writes, concurrent readers, reopen and close."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from knowhub.lang import query_tokens
from knowhub.providers.stores.base import Store
from knowhub.testing.store_contract.base import (
    NO_FILTERS,
    Opener,
    StoreFixtures,
    lexical,
    resolved,
    texts,
)
from knowhub.testing.store_data import (
    DIM,
    EMBEDDER,
    Doc,
    assert_whole,
    axis,
    make_doc,
    new_collection,
    normalised,
    put,
    unit_vectors,
)

__all__ = ["LifecycleContract"]


class LifecycleContract(StoreFixtures):
    """Size, concurrency, reopen and close."""

    # -- large batches -----------------------------------------------------------------

    def test_a_document_of_2000_chunks(self, store: Store) -> None:
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
        assert sorted(hit.chunk_id for hit in rows.values()) == sorted(
            c.chunk_id for c in doc.chunks
        )

        [top] = resolved(store, lexical(store, cid, "marker1234", limit=1))
        assert top.text == "passage marker1234 topic2"
        assert len(lexical(store, cid, "topic3", limit=n)) == len(range(3, n, 7))
        best = resolved(store, store.dense_search(cid, doc.vectors[1999], 3, NO_FILTERS))
        assert best[0].text == "passage marker1999 topic4"

        cached = store.cached_vectors(doc.cache_keys)
        assert len(cached) == n
        np.testing.assert_array_equal(cached[doc.cache_keys[1500]], doc.vectors[1500])
        assert_whole(store)

    def test_300_documents(self, store: Store) -> None:
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

        assert texts(store, lexical(store, cid, "doc217", limit=5)) == [
            "doc217 first",
            "doc217 second",
        ]
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

    # -- concurrency -------------------------------------------------------------------

    def test_concurrent_readers_never_see_a_mix_of_two_versions(self, opener: Opener) -> None:
        """Readers on their own connections search while a writer swaps one document.

        Version "alpha" has 3 chunks on axis 0, "beta" 5 chunks on axis 1; the query vector
        scores them 0.8 and 0.6, so a result holding both, or neither, is a torn read.
        """
        writer = opener()
        cid = new_collection(writer)
        _bystanders(writer, cid)
        put(writer, cid, _live_version(0))
        readers = _TornReadCheck([opener() for _ in range(3)], cid)
        threads = [threading.Thread(target=readers.read, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        try:
            readers.writing.set()
            for revision in range(1, 301):
                put(writer, cid, _live_version(revision))
                if readers.failures:
                    break
        finally:
            readers.writing.clear()
            readers.done.set()
            for thread in threads:
                thread.join(timeout=30)
        assert not readers.failures, readers.failures[:5]
        reads = readers.reads_during_writes
        assert all(n > 5 for n in reads), f"readers barely ran: {reads}"
        final = writer.record(cid, "/corpus/live.md")
        assert final is not None
        assert final.doc_hash == _live_version(300).record.doc_hash
        assert_whole(writer)

    # -- reopen and close --------------------------------------------------------------

    def test_everything_persists_after_close_and_reopen(self, opener: Opener) -> None:
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
        assert (
            texts(second, second.dense_search(cid, doc.vectors[1], 3, NO_FILTERS)) == dense_before
        )
        assert [(e.question, e.line) for e in second.faq(cid)] == [("Why?", 3)]
        assert set(second.cached_vectors(doc.cache_keys)) == set(doc.cache_keys)

        put(second, cid, make_doc("c.md", ["written after reopening"], seed=3))
        assert second.version(cid) > version
        assert texts(second, lexical(second, cid, "reopening")) == ["written after reopening"]
        assert_whole(second)

    def test_a_closed_store_raises_a_clear_error(self, opener: Opener) -> None:
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


def _bystanders(writer: Store, cid: int) -> None:
    """20 documents orthogonal to both versions of the live one."""
    rng = np.random.default_rng(0)
    for i in range(20):
        background = np.zeros((3, DIM))
        background[:, 2:] = rng.standard_normal((3, DIM - 2))
        put(
            writer,
            cid,
            make_doc(f"static{i}.md", ["static text"] * 3, vectors=normalised(background)),
        )


def _live_version(revision: int) -> Doc:
    n, word, direction = (3, "alpha", 0) if revision % 2 == 0 else (5, "beta", 1)
    paragraphs = [f"live {word} chunk {i} r{revision}" for i in range(n)]
    return make_doc(
        "live.md", paragraphs, vectors=np.tile(axis(direction), (n, 1)), revision=revision
    )


# The live document's chunk count → (the score of each under _QUERY, its version's word).
_EXPECTED = {3: (0.8, "alpha"), 5: (0.6, "beta")}
_QUERY = normalised(0.8 * axis(0) + 0.6 * axis(1))[0]


class _TornReadCheck:
    """Reader threads that search until ``done``, each check failing on a torn read."""

    def __init__(self, readers: list[Store], cid: int) -> None:
        self.readers = readers
        self.cid = cid
        self.writing = threading.Event()
        self.done = threading.Event()
        self.failures: list[str] = []
        self.reads_during_writes = [0] * len(readers)

    def read(self, index: int) -> None:
        reader, cid, terms = self.readers[index], self.cid, query_tokens("live")
        while not self.done.is_set():
            try:
                _check_lexical(reader, reader.lexical_search(cid, terms, 50, NO_FILTERS))
                filtered = reader.lexical_search(cid, terms, 50, {"source": "live.md"})
                _check_lexical(reader, filtered)
                _check_dense(reader.dense_search(cid, _QUERY, 50, NO_FILTERS), "unfiltered")
                dense = reader.dense_search(cid, _QUERY, 50, {"source": "live.md"})
                _check_dense(dense, "filtered")
            except BaseException as exc:  # reported in the main thread, never lost
                self.failures.append(f"reader {index}: {type(exc).__name__}: {exc}")
                return
            if self.writing.is_set():
                self.reads_during_writes[index] += 1


def _check_dense(results: list[tuple[int, float]], leg: str) -> None:
    scores = [s for _, s in results if s > 0.3]  # the bystanders score 0
    assert len(scores) in _EXPECTED, f"{leg} dense saw {len(scores)} live chunks: {scores}"
    assert np.allclose(scores, _EXPECTED[len(scores)][0], atol=1e-4), (leg, scores)


def _check_lexical(reader: Store, results: list[tuple[int, float]]) -> None:
    assert len(results) in _EXPECTED, f"lexical saw {len(results)} live chunks"
    rows = reader.hits([rowid for rowid, _ in results])
    # hits() may resolve fewer ids (a newer version freed them), never a mixture.
    hashes = {hit.doc_hash for hit in rows.values()}
    assert len(hashes) <= 1, f"hits() mixed versions: {hashes}"
    words = {hit.text.split()[1] for hit in rows.values()}
    assert len(words) <= 1, f"hits() mixed versions: {words}"
    for hit in rows.values():
        assert hit.chunk_id.startswith(hit.doc_hash[:16])
