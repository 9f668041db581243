"""``App.verify(fix=True)`` rebuilds a document under the name and tags it was ingested with,
whether it came from a folder walk or was named on its own."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from knowhub import build_app
from knowhub.providers.stores.schema import fts_table
from knowhub.providers.stores.sqlite import DB_NAME
from tests.helpers import fast_settings, write


def test_fix_keeps_each_documents_source_and_tags(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "guide" / "a[1]*.md", "# Odd name\n\nPangolin scales overlap like tiles.\n")
    write(docs / "guide" / "a1x.md", "# Lookalike\n\nA file the escaped pattern must not match.\n")
    single = write(tmp_path / "single.md", "# Single\n\nQuokkas smile at visitors.\n")
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        app.collection("kb").ingest([docs], {"team": "ops"}, include=["guide/a[[]1]*.md"])
        app.collection("kb").ingest([single], {"team": "web"})
        before = {r.source: r.metadata["tags"] for r in app.collection("kb").documents()}
        assert before == {"guide/a[1]*.md": {"team": "ops"}, "single.md": {"team": "web"}}
        assert app.verify("kb").ok

        cid = app.store.collection_id("kb")
        with sqlite3.connect(tmp_path / "data" / DB_NAME) as raw:
            raw.execute(f"DELETE FROM {fts_table(int(cid or 0))}")
        broken = app.verify("kb")
        assert {p.kind for p in broken.problems} == {"missing_lexical"}

        fixed = app.verify("kb", fix=True)
        assert fixed.ok, fixed.to_dict()
        assert sorted(fixed.fixed) == [
            "kb: guide/a[1]*.md: re-ingested",
            "kb: single.md: re-ingested",
        ]
        after = {r.source: r.metadata["tags"] for r in app.collection("kb").documents()}
        assert after == before, "the lookalike file was not picked up, names and tags kept"
        assert app.collection("kb").search("pangolin scales").hits[0].lexical_rank == 1
    finally:
        app.close()


def test_a_file_replaced_by_a_fifo_is_reported_changed_without_blocking(tmp_path: Path) -> None:
    # verify hashed a file whose size or mtime moved with open(): a FIFO blocked it forever.
    path = write(tmp_path / "docs" / "sub" / "a.md", "# A\n\nArmadillos roll into balls.\n")
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        app.collection("kb").ingest([tmp_path / "docs"])
        path.unlink()
        os.mkfifo(path)
        report = app.verify("kb")
        assert [(p.kind, p.subject) for p in report.problems] == [("changed_file", "sub/a.md")]
        fixed = app.verify("kb", fix=True)  # the repair says why it could not re-ingest it
        assert fixed.fix_failed == [
            "kb: sub/a.md: re-ingest failed: skipped: sub/a.md: is a FIFO (named pipe), not a "
            "regular file; only regular files are ingested"
        ]
    finally:
        app.close()
