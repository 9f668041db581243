"""A served folder's sync prunes its own vanished documents, never another folder's.

A collection may hold documents from several folders (``knowhub ingest notes mnt/wiki -c
handbook``). Serving one of them keeps the others' documents when their files are out of
reach (a share unmounted, its mount point left empty): only a folder renamed into the served
one (its documents found again there, its old path gone) loses what was not found again.
"""

from __future__ import annotations

from pathlib import Path

from knowhub import App, build_app
from knowhub.config import Settings
from knowhub.default_collection import folder_collection
from knowhub.interfaces.mcp.local import LocalService
from knowhub.interfaces.mcp.metrics import Metrics
from tests.helpers import fast_settings, write


def _sources(settings: Settings, collection: str) -> list[str]:
    app = build_app(settings)
    try:
        return sorted(r.source for r in app.documents(collection))
    finally:
        app.close()


def _folders(settings: Settings, collection: str) -> list[str]:
    app = build_app(settings)
    try:
        return sorted(Path(r.path).parent.name for r in app.documents(collection))
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
    app.ingest([notes, wiki], "handbook")
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
    app.ingest([docs], "handbook")
    (docs / "deploy.md").unlink()
    docs.rename(tmp_path / "Docs")  # `mv docs Docs`, a file deleted meanwhile
    served = fast_settings(tmp_path / "data", collection="handbook")
    _synced(served, tmp_path / "Docs")
    assert _sources(served, "handbook") == ["backups.md"]
    assert _folders(served, "handbook") == ["Docs"]
