"""Warm-up and the start-up checks of the HTTP servers.

Everything :func:`warm` loads also loads on first use, once, under a lock; warming only
moves that cost out of the first requests (which, arriving together on a fresh server, would
all wait for it) and makes a bad setting stop the start-up with its own message.

:func:`preflight` is what ``serve http`` and ``serve mcp --transport http`` run before they
answer a request (after the port is bound and the tokens and the bind are checked): the data
dir is writable, the store opens, every collection's active version is in it, the models load.
Each failure is one :class:`KnowhubError` naming the setting and the fix (docs/deployment.md,
"Start-up checks", quotes them); ``serve mcp`` over stdio only warms, in the background.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from knowhub.app import App
from knowhub.checks import logical_name
from knowhub.config import Settings
from knowhub.errors import ConfigError, KnowhubError, StoreError
from knowhub.lang import load_tokenizers
from knowhub.providers.stores.base import Store
from knowhub.query import crosslingual
from knowhub.versions.record import resolve_target

__all__ = ["preflight", "preflight_shared", "warm"]

log = logging.getLogger("knowhub")


def warm(app: App) -> None:
    """Open the store, build every provider and load: the tokenizers (jieba's dictionary,
    the stemmers), the embedder's model, the reranker's model, and each collection's
    search index (the SQLite store's derived index: postings, filter columns, vectors)
    with its version's embedder.

    Raises:
        KnowhubError: a provider cannot be built (a bad setting, a missing extra). A
            collection that cannot be warmed is only logged: it fails on its own requests.
    """
    load_tokenizers()
    store = app.store
    _check_providers(app)
    for view in app.collections():
        try:
            handle = app.collection(view.name)
            cid = store.collection_id(handle.target.physical)
            if cid is not None:
                store.dense_search(cid, handle.embedder.embed_query("warm-up"), 1, {})
        except KnowhubError as exc:
            log.warning("collection %r not warmed: %s", view.name, exc)


def _check_providers(app: App, load: bool = True) -> None:
    """Build the LLM client, the embedder and the reranker (checking their settings) and,
    with ``load``, load the embedder's and the reranker's models."""
    app.llm  # noqa: B018 - builds the client, so its settings are checked now
    embedder = app.embedder
    stage = app.reranker
    if load:
        embedder.warm()
        if embedder.cross_lingual:  # the first search across languages would embed them
            for language in sorted(crosslingual.LANGUAGES):
                crosslingual.language_mean(embedder, language)
        if stage is not None:
            stage.reranker.warm()


def preflight(app: App) -> str:
    """Check, in order, that the data dir is writable, the store opens, each collection's
    active version is in it and the models load; then warm up (:func:`warm`).

    Returns:
        The line the server logs: which checks passed.

    Raises:
        KnowhubError: the first check that failed, with what to do about it.
    """
    settings = app.settings
    data_dir = _check_data_dir(settings)
    collections = _check_active_versions(app.store)
    warm(app)
    stored = (
        f"{collections} collection{'s' if collections != 1 else ''}, each active version present"
        if collections
        else "empty (no collection yet: ingest documents)"
    )
    return (
        f"start-up checks passed: data dir {data_dir} writable; store {settings.store.provider} "
        f"open, {stored}; embedder {app.embedder.model_id} loaded, reranker "
        f"{settings.reranker.provider}, llm {settings.llm.provider}; "
        f"bearer tokens: {len(settings.server.tokens)}"
    )


def preflight_shared(settings: Settings) -> str:
    """Shared mode's checks: each session opens its own store and loads its models when it
    is registered or first used, so what every session needs is checked now: the data dir,
    and the providers' settings (built, not loaded)."""
    data_dir = _check_data_dir(settings)
    app = App(settings)
    try:
        _check_providers(app, load=False)
    finally:
        app.close()
    return f"start-up checks passed: data dir {data_dir} writable; providers configured"


def _check_data_dir(settings: Settings) -> Path:
    """Create the data dir if need be and prove this user may write in it (and, for the
    SQLite store, its database file): traces, uploads and caches go there, whatever store.

    Raises:
        ConfigError: naming the folder (or file), why, and the fix.
    """
    data_dir = Path(settings.data_dir)
    fix = (
        "give --data-dir (or KNOWHUB_DATA_DIR) a folder this user "
        f"(uid {os.getuid()}) may write, or change its owner or mode"
    )
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=data_dir, prefix=".knowhub-write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"data dir {data_dir} is not a writable folder ({reason}): {fix}"
        ) from exc
    # Imported here: `serve mcp` on stdio imports this module and no store before it answers.
    from knowhub.providers.stores.sqlite import DB_NAME

    if settings.store.provider != "sqlite":
        return data_dir
    database = data_dir / DB_NAME
    # The database, its write-ahead log and shared memory, and the derived index beside it:
    # a run as another user (root, say) may have left any of them that user's alone.
    companions = [database.with_name(database.name + end) for end in ("-wal", "-shm", ".index")]
    for path in (database, *companions):
        if path.exists() and not os.access(path, os.R_OK | os.W_OK):
            raise ConfigError(
                f"the store {path} is not writable by this user (uid {os.getuid()}): "
                "change the file's owner or mode to match the data dir's"
            )
    return data_dir


def _check_active_versions(store: Store) -> int:
    """Every collection's active version must have its data in the store: a version record
    pointing at a store collection that is gone would make the collection vanish from every
    listing and answer 404. Returns how many collections there are.

    Raises:
        StoreError: naming the collection, its active version and how to switch back.
    """
    names = sorted({logical_name(info.name) for info in store.collections()})
    for name in names:
        target = resolve_target(store, name)
        if store.collection_id(target.physical) is None:
            raise StoreError(
                f"collection {name!r}: its active version {target.number} has no data in the "
                f"store ({target.physical!r} is missing): switch back with `knowhub versions "
                f"rollback --collection {name}` or `knowhub versions activate --collection "
                f"{name} N` (see `knowhub versions list --collection {name}`), then start again"
            )
    return len(names)
