"""SQLite: rows written around the store (a bug, a crash elsewhere, a hand edit) are found
by ``orphans`` and removed by ``remove_orphans``, after which writes work again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from knowhub.providers.stores.base import Orphan
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.store_data import assert_whole, make_doc, new_collection, put


def test_orphan_chunks_and_lexical_rows_are_listed_and_removed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = new_collection(store)
    a = put(store, cid, make_doc("a.md", ["one", "two", "three"], seed=1))
    b = put(store, cid, make_doc("b.md", ["four", "five"], seed=2))

    raw = sqlite3.connect(tmp_path / DB_NAME)  # foreign keys off: nothing cascades
    last = raw.execute("SELECT max(id) FROM chunks").fetchone()[0]
    raw.execute("DELETE FROM chunks WHERE id = ?", (last,))  # b's last chunk; its FTS row stays
    raw.execute("DELETE FROM documents WHERE path = ?", (a.path,))  # a's chunks stay
    raw.commit()
    raw.close()

    found = store.orphans(cid)
    assert sorted(o.key for o in found if o.kind == "chunk") == sorted(c.chunk_id for c in a.chunks)
    assert [o for o in found if o.kind == "lexical"] == [Orphan("lexical", f"row {last}")]
    assert [s.tokens is not None for s in store.stored_chunks(cid, b.path)] == [True]

    version = store.version(cid)
    assert store.remove_orphans(cid) == 4
    assert store.orphans(cid) == []
    assert store.version(cid) > version
    # The freed row id is reused by the next insert: a stray FTS row there would break it.
    put(store, cid, make_doc("b.md", ["four", "five", "six"], seed=3, revision=1))
    put(store, cid, make_doc("c.md", ["seven"], seed=4))
    assert store.remove_document(cid, "/corpus/b.md")
    assert_whole(store)
    store.close()
