"""Which collection a request that names none uses: one rule for every interface.

The CLI, the HTTP API, the web console, the MCP tools, the chat agent's tools and ``knowhub
bench load`` all ask :func:`default_collection` (through the collection handle's
``checked_name``: ``App.named``, ``App.collection``), so a request without a collection
means the same everywhere. For a caller that may read
``allowed`` (a token's ``collections``; ``"*"``: all):

1. the configured ``collection``, when the caller may read it and it was *chosen* (set in
   the config file, the environment or a flag; for ``serve mcp``, the served folder's
   collection, :func:`folder_collection`) or exists;
2. for a caller limited to one collection, that one (it can mean no other);
3. reading, when the configured one is the unset default ``default``: the only collection
   there is that the caller may read (a data dir made by ``knowhub import`` of a bundle,
   or by ingesting with ``--collection``);
4. the configured one, when the caller may read it (an unknown one then fails with
   "unknown collection … (known: …)"; an ingest creates it);
5. else a :class:`~knowhub.errors.QueryError` listing the collections the caller may read
   (and no other: not the configured one).

An ingest (``writing``) skips 3: it creates the configured collection rather than add
documents to one it guessed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from pathlib import Path

from knowhub.checks import logical_name
from knowhub.config import Settings
from knowhub.errors import ConfigError, QueryError
from knowhub.providers.stores.base import Store
from knowhub.versions.record import collection_views, resolve_target

__all__ = ["ALL", "default_collection", "folder_collection"]

ALL: frozenset[str] = frozenset({"*"})

log = logging.getLogger("knowhub")


def default_collection(
    store: Store,
    settings: Settings,
    allowed: Collection[str] = ALL,
    *,
    writing: bool = False,
    served: Callable[[], str] | None = None,
) -> str:
    """The collection a request naming none uses, by the rule above; ``served``: finds the
    collection a server was started for (chosen, in place of ``settings.collection``), only
    when the rule needs it.

    Raises:
        ConfigError: ``served`` cannot tell (several collections index the server's folder),
            for a caller who may read every collection.
        QueryError: no collection fits; the message names only those the caller may read.
    """
    anything = "*" in allowed
    if not anything and len(allowed) == 1:
        # Before 1: it would give that one or none. The served one is not looked for: a
        # folder several collections index must not fail a caller who can mean one.
        return next(iter(allowed))
    configured, chosen = _configured(settings, allowed, served)
    readable = anything or configured in allowed
    if readable and (chosen or store.collection_id(configured) is not None):
        return configured
    if not writing and not chosen:
        names = {logical_name(info.name) for info in store.collections()}
        mine = names if anything else names & set(allowed)
        if len(mine) == 1:
            return mine.pop()
    if readable:
        return configured
    raise QueryError(_name_one(allowed))


def _name_one(allowed: Collection[str]) -> str:
    """Why a caller limited to ``allowed`` must name a collection: only its own are named
    (not the configured one, which it may not read)."""
    if not allowed:
        return (
            "no collection named, and this token may read no collection: its `collections` "
            "in server.tokens must list one"
        )
    return (
        f"no collection named, and this token may read several ({', '.join(sorted(allowed))}): "
        "name one (`collection`)"
    )


def _configured(
    settings: Settings, allowed: Collection[str], served: Callable[[], str] | None
) -> tuple[str, bool]:
    """The configured collection (the served one, with ``served``) and whether it was chosen."""
    if served is None:
        return settings.collection, "collection" in settings.model_fields_set
    try:
        return served(), True
    except ConfigError as exc:
        if "*" in allowed:  # its message names every collection: this caller may read them
            raise
        raise QueryError(
            "no collection named, and several collections index this server's folder: name "
            f"one of yours ({', '.join(sorted(allowed))}) (`collection`)"
        ) from exc


def folder_collection(store: Store, settings: Settings, folder: Path) -> str:
    """The collection a served folder is indexed into: the configured ``collection`` when
    chosen; else the collection that indexes ``folder`` and nothing else (every document
    of it was ingested from ``folder``), so that serving it again reuses that index instead
    of building a copy; else the configured one. A collection that holds other folders'
    documents too is never taken on a guess: the served folder's sync would then be the
    only one keeping it, and it is logged how to serve it from that one.

    Raises:
        ConfigError: several collections index ``folder`` alone and none is configured:
            the message names them and how to choose.
    """
    configured = settings.collection
    if "collection" in settings.model_fields_set:
        return configured
    owners: list[str] = []
    shared: list[str] = []
    for view in collection_views(store):
        roots = _roots(store, view.name)
        mine = [_same_folder(root, folder) for root in roots]
        if mine and all(mine):
            owners.append(view.name)
        elif any(mine):
            shared.append(view.name)
    if configured in owners or not owners:
        if shared and configured not in shared:
            log.info(
                "%s is indexed into %s along with other folders: serving it as %r (to serve "
                "it from %s, set `collection: %s` or KNOWHUB_COLLECTION)",
                folder,
                ", ".join(shared),
                configured,
                shared[0],
                shared[0],
            )
        return configured
    if len(owners) == 1:
        return owners[0]
    raise ConfigError(
        f"{folder} is indexed by the collections {', '.join(owners)}: serve one of them, "
        f"e.g. `collection: {owners[0]}` in the config file or KNOWHUB_COLLECTION={owners[0]}"
    )


def _roots(store: Store, collection: str) -> set[str]:
    """The folders ``collection``'s active version's documents were ingested from."""
    cid = store.collection_id(resolve_target(store, collection).physical)
    return set() if cid is None else {record.folder for record in store.records(cid)}


def _same_folder(root: str, folder: Path) -> bool:
    if not root:
        return False
    given = Path(root)
    try:  # spelled alike, or alike once links are resolved (a folder served by its link)
        return given == folder or given.resolve() == folder.resolve()
    except (OSError, RuntimeError):  # a symlink loop on the way: not this folder
        return False
