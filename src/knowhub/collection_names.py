"""Which collection a request means, and which a caller may see: the rules every
handle (:class:`knowhub.collection.Collection`) and listing apply."""

from __future__ import annotations

from knowhub.caller import Caller
from knowhub.checks import check_collection_name
from knowhub.default_collection import ALL, default_collection
from knowhub.runtime import Runtime
from knowhub.versions.record import CollectionView, collection_views

__all__ = ["checked_name", "readable_views"]


def checked_name(
    runtime: Runtime, caller: Caller, name: str | None, *, writing: bool = False
) -> str:
    """The collection a request on ``name`` means: ``name``, or for None the one rule of
    :mod:`knowhub.default_collection` (an ingest's, with ``writing``), for the collections
    ``caller`` may read; either way one it may read, else :class:`AuthError`."""
    if not name:
        allowed = ALL if "*" in caller.collections else caller.collections
        name = default_collection(
            runtime.store, runtime.settings, allowed, writing=writing, served=runtime.served
        )
    name = check_collection_name(name)
    caller.check_read(name)
    return name


def readable_views(runtime: Runtime, caller: Caller) -> list[CollectionView]:
    """Each collection ``caller`` may read, once, as its active version holds it."""
    return caller.readable(collection_views(runtime.store), lambda view: view.name)
