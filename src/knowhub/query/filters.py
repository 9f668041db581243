"""The filter keys a collection knows, looked up once per collection version.

Every chunk has the columns (``knowhub.checks.FILTER_COLUMNS``); any other key is read from
the chunk's metadata, which ingest copies from its document: the loader's scalar metadata
(front matter, PDF info) and the document's tags. Those keys are therefore derived from the
documents' records, which every store backend already lists, rather than from a new store
method each backend would have to implement: one scan of the (few, small) document rows per
collection version, and only when a filter names a key that is not a column.
"""

from __future__ import annotations

from collections.abc import Iterable

from knowhub.checks import check_filter_keys, logical_name
from knowhub.models import DocumentRecord, Filters, FilterValue
from knowhub.providers.stores.base import Store
from knowhub.query.cache import SearchCaches
from knowhub.scope import UNRESTRICTED, Scope, record_scope

__all__ = ["metadata_keys", "resolve_filters"]


def resolve_filters(
    store: Store,
    cid: int,
    name: str,
    filters: Filters,
    caches: SearchCaches | None,
    scope: Scope = UNRESTRICTED,
) -> dict[str, FilterValue]:
    """``filters`` of a search on store collection ``name`` (id ``cid``) with their keys
    resolved (aliases) and checked against what the documents ``scope`` sees hold (a key
    only hidden documents have must not be told to the caller, nor tell them apart)."""

    def known() -> frozenset[str]:
        # Any write makes a new key, so keys never go stale; keyed by scope, as they differ.
        key = (cid, store.version(cid), scope.digest())
        found = caches.filter_keys.get(key) if caches is not None else None
        if found is None:
            seen = (r for r in store.records(cid) if scope.admits(record_scope(r.metadata)))
            found = metadata_keys(seen)
            if caches is not None:
                caches.filter_keys.put(key, found)
        return found

    return check_filter_keys(filters, known, logical_name(name))


def metadata_keys(records: Iterable[DocumentRecord]) -> frozenset[str]:
    """The metadata keys chunks of these documents can be filtered on: what ingest copies
    into every chunk (``knowhub.ingest.pipeline``), i.e. scalar metadata and tag names, and
    the keys it adds to some chunks (LLM keywords), listed as ``knowhub.chunk_keys``, and the
    data scope's attributes (``knowhub.scope``)."""
    keys: set[str] = set()
    for record in records:
        own = record.metadata.get("knowhub")
        if isinstance(own, dict):
            keys.update(str(key) for key in own.get("chunk_keys") or ())
        if (scope := record_scope(record.metadata)) is not None:
            keys.update(scope.chunk_metadata())  # ingest writes them into every chunk
        for key, value in record.metadata.items():
            if key == "tags" and isinstance(value, dict):
                keys.update(str(tag) for tag in value)
            elif isinstance(value, str | int | float | bool):
                keys.add(key)
    return frozenset(keys)
