"""The derived lexical index folds terms exactly as FTS5's unicode61 tokenizer does."""

from __future__ import annotations

import sqlite3

from knowhub.providers.stores.derived.postings import fts5_folded


def test_every_latin_and_cyrillic_letter_folds_as_fts5_stores_it() -> None:
    ranges = [(0xC0, 0x250), (0x1E00, 0x1F00), (0x400, 0x500)]
    letters = [chr(c) for start, end in ranges for c in range(start, end) if chr(c).isalnum()]
    terms = [f"x{c.lower()}y" for c in letters] + ["i\u0307", "e\u0301", "ǘber", "straße"]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(t)")
    db.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", enumerate(terms))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance')")
    stored = {doc: term for term, doc in db.execute("SELECT term, doc FROM v")}
    assert {i: fts5_folded(t) for i, t in enumerate(terms)} == stored
