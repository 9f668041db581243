"""A request naming no collection reads the configured one, or the only one there is."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App, StoreError, build_app
from tests.helpers import fast_settings, write


def _with(app: App, tmp_path: Path, *names: str) -> None:
    for name in names:
        write(tmp_path / name / "a.md", f"Backups of {name} run nightly.\n")
        app.ingest([tmp_path / name], name)


def test_the_only_collection_is_used_when_none_is_named(app: App, tmp_path: Path) -> None:
    # As after `knowhub import kb.jsonl` into a new data dir: one collection, not "default".
    _with(app, tmp_path, "kb")
    assert [h.collection for h in app.search("backups").hits] == ["kb"]
    assert [r.collection for r in app.documents()] == ["kb"]
    assert [t.collection for t in app.traces() if t.kind == "search"] == ["kb"]


def test_with_several_collections_none_is_guessed(app: App, tmp_path: Path) -> None:
    _with(app, tmp_path, "kb", "ops")
    with pytest.raises(StoreError, match=r"unknown collection 'default' \(known: kb, ops\)"):
        app.documents()
    _with(app, tmp_path, "default")
    assert [h.collection for h in app.search("backups").hits] == ["default"]


def test_a_configured_collection_is_never_replaced(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data", collection="mine"))
    try:
        _with(app, tmp_path, "kb")
        with pytest.raises(StoreError, match="unknown collection 'mine'"):
            app.documents()
    finally:
        app.close()


def test_faq_import_never_creates_an_empty_collection(app: App, tmp_path: Path) -> None:
    faq = write(tmp_path / "faq.csv", "question,answer\nWho reviews backups?,The on-call.\n")
    with pytest.raises(StoreError, match=r"unknown collection 'default' \(known: none yet\)"):
        app.faq_import([faq])
    with pytest.raises(StoreError, match=r"unknown collection 'kb'"):
        app.faq_import([faq], "kb")
    assert app.collections() == []
    _with(app, tmp_path, "kb")
    assert app.faq_import([faq]) == [(str(faq.resolve()), 1)]  # the only collection
    assert [e.question for e in app.faq("kb")] == ["Who reviews backups?"]
