"""The store contract, part one: collections, records and metadata.

Results are compared by chunk id, text and document hash, never by row id, because backends
number rows their own way (and SQLite even reuses the ids a replaced document freed).
"""

from __future__ import annotations

import threading

import pytest

from knowhub.errors import StoreError
from knowhub.providers.stores.base import Store
from knowhub.testing.store_contract.base import (
    NO_FILTERS,
    Opener,
    StoreFixtures,
    lexical,
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

__all__ = ["CatalogContract"]


class CatalogContract(StoreFixtures):
    """Collections, records and metadata: naming, finding, dropping, compare-and-set."""

    # -- collections -------------------------------------------------------------------

    def test_ensure_collection_is_idempotent_and_refuses_another_embedder(
        self, store: Store
    ) -> None:
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
        self,
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
        assert (after_remove.documents, after_remove.chunks, after_remove.lexical_chunks) == (
            1,
            2,
            2,
        )
        assert after_remove.version > after_put.version
        assert_whole(store)

    def test_records_round_trip_and_are_found_by_path_source_or_hash(self, store: Store) -> None:
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

    def test_wildcard_characters_never_match_by_pattern(self, store: Store) -> None:
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

    # -- dropping a collection ---------------------------------------------------------

    def test_drop_collection_removes_it_whole_and_leaves_the_others(self, opener: Opener) -> None:
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

    # -- metadata ----------------------------------------------------------------------

    def test_meta_values_change_only_by_compare_and_set(self, opener: Opener) -> None:
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

    def test_concurrent_compare_and_set_loses_no_update(self, opener: Opener) -> None:
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
