"""A document's data scope at ingest: its tags over ``ingest.scope`` (``knowhub.scope``).

Scope attributes come from tags and settings only, never from the file: front matter saying
``visibility: public`` must not publish a document its owner tagged restricted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowhub.config import Settings
from knowhub.errors import IngestError
from knowhub.ingest.identity import stored_tags
from knowhub.models import DocumentRecord
from knowhub.scope import SCOPE_KEYS, DocumentScope, ScopeValueError, document_scope, record_scope

__all__ = ["checked_scope", "scope_stale", "scoped_metadata"]


def checked_scope(tags: Mapping[str, str], settings: Settings) -> DocumentScope:
    """The scope ``tags`` give over ``ingest.scope``; a bad value is an IngestError naming
    the tag (checked once per run, before any file is read)."""
    try:
        return document_scope(tags, settings.ingest.scope)
    except ScopeValueError as exc:
        raise IngestError(str(exc)) from exc


def scoped_metadata(
    loader: Mapping[str, Any], tags: Mapping[str, str], scope: DocumentScope
) -> dict[str, Any]:
    """Every chunk's metadata: the loader's and the tags' (scope keys left out of both),
    then the scope's attributes (``DocumentScope.chunk_metadata``)."""
    plain = {k: v for k, v in {**loader, **tags}.items() if k not in SCOPE_KEYS}
    return {**plain, **scope.chunk_metadata()}


def scope_stale(record: DocumentRecord, settings: Settings) -> bool:
    """Whether ``record``'s stored scope is not what its tags and ``ingest.scope`` give now
    (written before scopes existed, or the default changed): it is then written again."""
    try:
        wanted = document_scope(stored_tags(record), settings.ingest.scope)
    except ScopeValueError:
        return True  # its chunks are rewritten, and the run reports the bad tag
    return record_scope(record.metadata) != wanted
