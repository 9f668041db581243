"""A served folder's sync prunes its own vanished documents, never another folder's.

A collection may hold documents from several folders (``knowhub ingest notes mnt/wiki -c
handbook``). Serving one of them keeps the others' documents when their files are out of
reach (a share unmounted, its mount point left empty): only a folder renamed into the served
one (its documents found again there, its old path gone) loses what was not found again.
"""

from __future__ import annotations

import itertools
import logging
import threading
from pathlib import Path

import pytest

from knowhub import App, ConfigError, KnowhubError, build_app
from knowhub.caller import LOCAL_USER, Caller
from knowhub.config import Settings
from knowhub.default_collection import folder_collection
from knowhub.interfaces.mcp.kb import KnowledgeBase
from knowhub.interfaces.mcp.local import LocalService
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.tools.base import Target
from knowhub.interfaces.mcp.watch import FolderWatcher
from knowhub.models import DocumentRecord
from tests.helpers import catching, fast_settings, write
from tests.mcp_helpers import wait_until


def _sources(settings: Settings, collection: str) -> list[str]:
    app = build_app(settings)
    try:
        return sorted(r.source for r in app.collection(collection).documents())
    finally:
        app.close()


def _folders(settings: Settings, collection: str) -> list[str]:
    app = build_app(settings)
    try:
        return sorted(Path(r.path).parent.name for r in app.collection(collection).documents())
    finally:
        app.close()


def _synced(settings: Settings, docs: Path) -> LocalService:
    service = LocalService(settings, docs, Metrics(), watch=False)
    try:
        service.sync()
    finally:
        service.close()
    return service


def _handbook(app: App, tmp_path: Path) -> tuple[Path, Path]:
    """``handbook`` from ``notes/`` and ``mnt/wiki/``, then the wiki unmounted: its mount
    point is left, empty."""
    notes, wiki = tmp_path / "notes", tmp_path / "mnt" / "wiki"
    write(notes / "backups.md", "Backups run nightly.\n")
    write(wiki / "deploy.md", "Deploys go out on Tuesdays.\n")
    write(wiki / "oncall.md", "The on-call rota changes on Mondays.\n")
    app.collection("handbook").ingest([notes, wiki])
    for page in wiki.iterdir():
        page.unlink()
    return notes, wiki


def test_serving_one_folder_of_a_collection_keeps_the_other_folders_documents(
    app: App, tmp_path: Path
) -> None:
    notes, _ = _handbook(app, tmp_path)
    settings = fast_settings(tmp_path / "data", collection="handbook")
    _synced(settings, notes)
    assert _sources(settings, "handbook") == ["backups.md", "deploy.md", "oncall.md"]


def test_a_collection_holding_other_folders_too_is_not_taken_for_the_served_folders(
    app: App, tmp_path: Path
) -> None:
    notes, _ = _handbook(app, tmp_path)
    assert folder_collection(app.store, app.settings, notes) == "default"
    _synced(fast_settings(tmp_path / "data"), notes)
    assert _sources(app.settings, "handbook") == ["backups.md", "deploy.md", "oncall.md"]
    assert _sources(app.settings, "default") == ["backups.md"]


def test_a_renamed_folder_loses_the_documents_not_found_again(app: App, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs / "backups.md", "Backups run nightly.\n")
    write(docs / "deploy.md", "Deploys go out on Tuesdays.\n")
    app.collection("handbook").ingest([docs])
    (docs / "deploy.md").unlink()
    docs.rename(tmp_path / "Docs")  # `mv docs Docs`, a file deleted meanwhile
    served = fast_settings(tmp_path / "data", collection="handbook")
    _synced(served, tmp_path / "Docs")
    assert _sources(served, "handbook") == ["backups.md"]
    assert _folders(served, "handbook") == ["Docs"]


# -- a folder two collections index: which a call naming none uses --------------------


def _two_owners(app: App, tmp_path: Path) -> Path:
    """``docs/`` ingested into ``handbook`` and ``wiki``; ``private`` from elsewhere."""
    docs = write(tmp_path / "docs" / "a.md", "Backups run nightly.\n").parent
    app.collection("handbook").ingest([docs])
    app.collection("wiki").ingest([docs])
    app.collection("private").ingest([write(tmp_path / "board" / "m.md", "Minutes.\n").parent])
    return docs


def _target(kb: KnowledgeBase, *collections: str) -> Target:
    principal = Caller("t", frozenset(collections)) if collections else LOCAL_USER
    return Target(kb, principal, kb.root, "local")


def test_a_token_limited_to_one_collection_is_not_asked_which_owner(
    app: App, tmp_path: Path
) -> None:
    docs = _two_owners(app, tmp_path)
    kb = KnowledgeBase(app.settings, docs)
    try:
        assert _target(kb, "private").collection(None) == "private"
        with pytest.raises(ConfigError, match="handbook, wiki"):  # who may read all: told all
            _target(kb).collection(None)
    finally:
        kb.close()


def test_a_limited_token_is_asked_to_name_one_of_its_own(app: App, tmp_path: Path) -> None:
    docs = _two_owners(app, tmp_path)
    kb = KnowledgeBase(app.settings, docs)
    try:
        with pytest.raises(KnowhubError) as raised:
            _target(kb, "handbook", "private").collection(None)
    finally:
        kb.close()
    message = str(raised.value)
    assert "several collections index this server's folder" in message
    assert "(handbook, private)" in message and "`collection`" in message
    assert "wiki" not in message and str(docs) not in message


def test_which_collections_index_the_folder_is_read_once(app: App, tmp_path: Path) -> None:
    docs = _two_owners(app, tmp_path)
    kb = KnowledgeBase(app.settings, docs)
    reads = _count_records(kb)
    try:
        for _ in range(3):
            with pytest.raises(ConfigError):
                _target(kb).collection(None)
    finally:
        kb.close()
    assert sorted(reads.values()) == [1, 1, 1]  # each collection's records, on the first call


def _count_records(kb: KnowledgeBase) -> dict[int, int]:
    """How many times each collection's records are read from now on."""
    counts: dict[int, int] = {}
    store = kb.reader.store
    records = store.records

    def counted(cid: int) -> list[DocumentRecord]:
        counts[cid] = counts.get(cid, 0) + 1
        return records(cid)

    store.records = counted  # type: ignore[method-assign]
    return counts


def test_a_sync_the_watcher_cannot_run_is_a_warning_without_traceback(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    called = threading.Event()

    def sync() -> None:
        called.set()
        raise ConfigError("docs is indexed by the collections handbook, wiki: serve one")

    edits = itertools.count()

    def edited() -> bool:
        # The watcher starts watching in a thread of its own, so an edit may come before it
        # watches: one more, until its sync is called.
        write(docs / "a.md", f"Edited {next(edits)}.\n")
        return called.is_set()

    watcher = FolderWatcher(docs, sync, debounce_ms=50)
    re_indexing = catching("knowhub.mcp", lambda r: r.getMessage().startswith("re-indexing"))
    with re_indexing as caught:
        watcher.start()
        try:
            wait_until(edited)
            record = caught.first()  # logged as the sync fails
        finally:
            watcher.stop()
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "handbook, wiki: serve one" in record.getMessage()
