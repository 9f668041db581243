"""The store contract, part two: writes are atomic, refused whole, and leave no orphan.

Results are compared by chunk id, text and document hash, never by row id, because backends
number rows their own way (and SQLite even reuses the ids a replaced document freed).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from knowhub.errors import StoreError
from knowhub.providers.stores.base import DocumentWrite, Store, replace_documents
from knowhub.testing.store_contract.base import (
    NO_FILTERS,
    Opener,
    StoreFixtures,
    lexical,
    resolved,
    sources,
    texts,
)
from knowhub.testing.store_data import (
    DIM,
    EMBEDDER,
    assert_whole,
    make_doc,
    new_collection,
    put,
    unit_vectors,
)

__all__ = ["WriteContract"]


class WriteContract(StoreFixtures):
    """Writes: atomic replace and delete, refused writes, FAQ, the embedding cache, integrity."""

    # -- atomic replace and delete -----------------------------------------------------

    def test_replacing_a_document_with_fewer_chunks_leaves_nothing_of_the_old_one(
        self,
        store: Store,
    ) -> None:
        cid = new_collection(store)
        put(store, cid, make_doc("other.md", ["an unrelated text about horses"], seed=9))
        old = put(store, cid, make_doc("z.md", [f"zebra number {i}" for i in range(5)], seed=1))
        old_lexical = lexical(store, cid, "zebra")
        old_dense = store.dense_search(cid, old.vectors[4], 50, NO_FILTERS)
        assert {h.chunk_id for h in resolved(store, old_lexical)} == {
            c.chunk_id for c in old.chunks
        }

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

    def test_a_failed_replace_changes_nothing(self, store: Store) -> None:
        cid = new_collection(store)
        doc = put(store, cid, make_doc("a.md", ["kept text"], seed=1))
        version = store.version(cid)
        broken = make_doc("a.md", ["new text", "more"], seed=2, revision=1)
        with pytest.raises(StoreError):
            # One token string short: the store must refuse before touching anything.
            store.replace_document(
                cid,
                broken.record,
                broken.chunks,
                broken.vectors,
                broken.tokens[:1],
                broken.cache_keys,
            )
        assert store.record(cid, doc.path) == doc.record
        assert texts(store, lexical(store, cid, "kept")) == ["kept text"]
        assert store.version(cid) == version
        assert_whole(store)

    def test_replace_document_with_previous_moves_the_document_in_one_write(
        self, store: Store
    ) -> None:
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
        assert sources(store, store.dense_search(cid, old.vectors[0], 1, NO_FILTERS)) == {
            "Notes/a.md"
        }
        assert [h.source for h in store.chunks_by_id(old.chunks[0].chunk_id)] == ["Notes/a.md"]
        [info] = store.collections()
        assert (info.documents, info.chunks, info.lexical_chunks) == (2, 2, 2)
        assert_whole(store)

    def test_a_group_of_writes_keeps_each_document_whole_and_skips_a_bad_one(
        self, store: Store
    ) -> None:
        # Ingest writes documents in groups (one commit where the backend can): every document
        # reaches both legs, and a write the store refuses leaves the others written.
        cid = new_collection(store)
        docs = [make_doc(f"g{n}.md", [f"group word{n} text"], seed=n) for n in range(3)]
        writes = [
            DocumentWrite(d.record, d.chunks, d.vectors, d.tokens, d.cache_keys) for d in docs
        ]
        writes[1] = dataclasses.replace(writes[1], vectors=writes[1].vectors[:, :3])  # wrong dim
        errors = replace_documents(store, cid, writes)
        assert errors[0] is None and errors[2] is None and isinstance(errors[1], StoreError)
        assert sorted(r.source for r in store.records(cid)) == ["g0.md", "g2.md"]
        assert sources(store, lexical(store, cid, "word2")) == {"g2.md"}
        assert sources(store, store.dense_search(cid, docs[0].vectors[0], 1, NO_FILTERS)) == {
            "g0.md"
        }
        assert_whole(store)

    def test_remove_document_removes_it_from_both_legs_and_records(self, store: Store) -> None:
        cid = new_collection(store)
        keep = put(store, cid, make_doc("keep.md", ["shared words kept"], seed=1))
        gone = put(store, cid, make_doc("gone.md", ["shared words gone", "more gone"], seed=2))
        version = store.version(cid)

        assert store.remove_document(cid, gone.path) is True
        assert store.version(cid) > version
        assert sources(store, lexical(store, cid, "shared words")) == {"keep.md"}
        assert sources(store, store.dense_search(cid, gone.vectors[0], 50, NO_FILTERS)) == {
            "keep.md"
        }
        assert [r.source for r in store.records(cid)] == ["keep.md"]
        assert store.record(cid, gone.path) is None
        assert store.chunks_by_id(gone.chunks[0].chunk_id) == []
        assert store.remove_document(cid, gone.path) is False
        assert store.remove_document(cid, "/corpus/never-there.md") is False
        assert store.record(cid, keep.path) == keep.record
        assert_whole(store)

    # -- dimensions --------------------------------------------------------------------

    def test_vectors_of_another_dimension_are_refused(self, store: Store) -> None:
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
        assert texts(store, store.dense_search(cid, kept.vectors[0], 5, NO_FILTERS)) == [
            "kept text"
        ]
        assert_whole(store)

    # -- FAQ and embedding cache -------------------------------------------------------

    def test_faq_entries_are_replaced_per_source(self, store: Store) -> None:
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
        assert [(e.source, e.question) for e in store.faq(cid)] == [
            ("a.md", "Only?"),
            ("b.md", "Где?"),
        ]
        assert store.remove_faq(cid, "b.md") == 1
        assert store.remove_faq(cid, "b.md") == 0
        assert [e.question for e in store.faq(cid)] == ["Only?"]
        assert [e.question for e in store.faq(other)] == ["Elsewhere?"]

    def test_cached_vectors_returns_what_replace_document_stored(self, store: Store) -> None:
        cid = new_collection(store)
        doc = put(store, cid, make_doc("a.md", ["first", "second", "third"], seed=6))
        assert store.cached_vectors([]) == {}
        cached = store.cached_vectors([*doc.cache_keys, "no-such-key"])
        assert set(cached) == set(doc.cache_keys)
        for key, vector in zip(doc.cache_keys, doc.vectors, strict=True):
            assert cached[key].dtype == np.float32
            np.testing.assert_array_equal(cached[key], vector)

    def test_cache_vectors_keeps_vectors_for_a_later_run_without_a_document(
        self, opener: Opener
    ) -> None:
        # What a stopped ingest computed: no document holds these vectors yet.
        store = opener()
        vectors = unit_vectors(3, seed=7)
        store.cache_vectors(["k1", "k2", "k3"], vectors)
        store.cache_vectors([], unit_vectors(0, seed=7))
        store.cache_vectors(["k1"], unit_vectors(1, seed=8))  # a key's vector never changes
        store.close()
        reopened = opener()
        cached = reopened.cached_vectors(["k1", "k2", "k3", "k4"])
        assert set(cached) == {"k1", "k2", "k3"}
        for key, vector in zip(["k1", "k2", "k3"], vectors, strict=True):
            assert cached[key].dtype == np.float32
            np.testing.assert_array_equal(cached[key], vector)
        assert_whole(reopened)

    # -- integrity; verify and export read each leg ------------------------------------

    def test_integrity_holds_after_a_mixed_workload(self, store: Store) -> None:
        cid = new_collection(store)
        notes = new_collection(store, "notes")
        assert_whole(store)
        for revision in range(4):
            put(
                store,
                cid,
                make_doc("a.md", ["x"] * (4 - revision), seed=revision, revision=revision),
            )
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

    def test_stored_chunks_give_back_each_chunk_with_its_vector_and_tokens(
        self, store: Store
    ) -> None:
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

    def test_a_whole_store_has_no_orphans_to_remove(self, store: Store) -> None:
        cid = new_collection(store)
        assert store.orphans(cid) == []
        for revision in range(3):
            put(
                store,
                cid,
                make_doc("a.md", ["x"] * (3 - revision), seed=revision, revision=revision),
            )
        put(store, cid, make_doc("b.md", ["b", "c"], seed=1))
        store.remove_document(cid, "/corpus/b.md")
        version = store.version(cid)
        assert store.orphans(cid) == []
        assert store.remove_orphans(cid) == 0
        assert store.version(cid) == version, "removing nothing is no write"
        assert_whole(store)
