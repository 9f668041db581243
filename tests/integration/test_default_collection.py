"""A request naming no collection reads the configured one, or the only one there is."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App, ConfigError, QueryError, StoreError, build_app
from knowhub.caller import Caller
from knowhub.default_collection import folder_collection
from tests.helpers import fast_settings, write


def _limited(app: App, collections: list[str]) -> App:
    """``app`` for a token that may read only ``collections``."""
    return app.for_caller(Caller("token", frozenset(collections)))


def _with(app: App, tmp_path: Path, *names: str) -> None:
    for name in names:
        write(tmp_path / name / "a.md", f"Backups of {name} run nightly.\n")
        app.collection(name).ingest([tmp_path / name])


def test_the_only_collection_is_used_when_none_is_named(app: App, tmp_path: Path) -> None:
    # As after `knowhub import kb.jsonl` into a new data dir: one collection, not "default".
    _with(app, tmp_path, "kb")
    assert [h.collection for h in app.collection().search("backups").hits] == ["kb"]
    assert [r.collection for r in app.collection().documents()] == ["kb"]
    assert [t.collection for t in app.traces() if t.kind == "search"] == ["kb"]


def test_with_several_collections_none_is_guessed(app: App, tmp_path: Path) -> None:
    _with(app, tmp_path, "kb", "ops")
    with pytest.raises(StoreError, match=r"unknown collection 'default' \(known: kb, ops\)"):
        app.collection().documents()
    _with(app, tmp_path, "default")
    assert [h.collection for h in app.collection().search("backups").hits] == ["default"]


def test_a_configured_collection_is_never_replaced(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data", collection="mine"))
    try:
        _with(app, tmp_path, "kb")
        with pytest.raises(StoreError, match="unknown collection 'mine'"):
            app.collection().documents()
    finally:
        app.close()


def test_faq_import_never_creates_an_empty_collection(app: App, tmp_path: Path) -> None:
    faq = write(tmp_path / "faq.csv", "question,answer\nWho reviews backups?,The on-call.\n")
    with pytest.raises(StoreError, match=r"unknown collection 'default' \(known: none yet\)"):
        app.collection().faq_import([faq])
    with pytest.raises(StoreError, match=r"unknown collection 'kb'"):
        app.collection("kb").faq_import([faq])
    assert app.collections() == []
    _with(app, tmp_path, "kb")
    assert app.collection().faq_import([faq]) == [(str(faq.resolve()), 1)]  # the only collection
    assert [e.question for e in app.collection("kb").faq()] == ["Who reviews backups?"]


# -- the one rule, for a caller limited to some collections (a token's `collections`) ----


def test_a_caller_limited_to_one_collection_defaults_to_it(app: App, tmp_path: Path) -> None:
    _with(app, tmp_path, "default", "board")
    board = _limited(app, ["board"])
    assert board.default_collection() == "board"
    assert [h.collection for h in board.collection().search("backups").hits] == ["board"]
    assert [r.collection for r in board.collection().documents()] == ["board"]
    write(tmp_path / "new" / "b.md", "Minutes are kept for ten years.\n")
    # writes go there too
    assert board.collection().ingest([tmp_path / "new"]).collection == "board"


def test_a_caller_limited_to_several_gets_the_configured_one_if_allowed(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data", collection="ops"))
    try:
        _with(app, tmp_path, "ops", "hr", "board")
        assert _limited(app, ["ops", "hr"]).default_collection() == "ops"
        with pytest.raises(QueryError) as raised:
            _limited(app, ["hr", "board"]).collection().search("backups")
        message = str(raised.value)
        assert "this token may read several (board, hr): name one (`collection`)" in message
        assert "ops" not in message  # a collection it may not read is not named
        with pytest.raises(QueryError, match=r"may read no collection") as raised:
            _limited(app, []).collection().search("backups")
        assert "()" not in str(raised.value) and "ops" not in str(raised.value)
    finally:
        app.close()


def test_the_only_collection_a_limited_caller_may_read_among_several(
    app: App, tmp_path: Path
) -> None:
    # Nothing configured, no `default`: of its two, only `kb` exists.
    _with(app, tmp_path, "kb", "other")
    assert _limited(app, ["kb", "missing"]).default_collection() == "kb"
    with pytest.raises(QueryError, match="kb, other"):
        _limited(app, ["kb", "other"]).default_collection()


def test_an_ingest_naming_no_collection_creates_the_configured_one(
    app: App, tmp_path: Path
) -> None:
    # Reads fall back on the only collection there is; an ingest never guesses.
    _with(app, tmp_path, "kb")
    assert app.default_collection() == "kb"
    assert app.default_collection(writing=True) == "default"
    write(tmp_path / "more" / "c.md", "Restores are tested monthly.\n")
    assert app.collection().ingest([tmp_path / "more"]).collection == "default"


def test_a_served_folder_goes_into_the_collection_that_indexes_it(app: App, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "a.md", "Backups run nightly.\n")
    write(docs / "sub" / "b.md", "Restores are tested monthly.\n")
    link = tmp_path / "link"
    link.symlink_to(docs)
    assert folder_collection(app.store, app.settings, docs) == "default"  # nothing yet
    app.collection("handbook").ingest([docs])
    assert folder_collection(app.store, app.settings, docs) == "handbook"
    assert folder_collection(app.store, app.settings, link) == "handbook"  # the same folder
    # A subfolder is not that folder: its documents' sources would all differ.
    assert folder_collection(app.store, app.settings, docs / "sub") == "default"
    app.collection("wiki").ingest([link])
    with pytest.raises(ConfigError, match=r"collections handbook, wiki: .*KNOWHUB_COLLECTION"):
        folder_collection(app.store, app.settings, docs)
    chosen = fast_settings(tmp_path / "data", collection="mine")
    assert folder_collection(app.store, chosen, docs) == "mine"  # a chosen one is taken
