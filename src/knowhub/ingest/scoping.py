"""A document's data scope at ingest: its tags over ``ingest.scope`` (``knowhub.scope``).

Scope attributes come from tags and settings only, never from the file: front matter saying
``visibility: public`` must not publish a document its owner tagged restricted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowhub.config import Settings
from knowhub.errors import AuthError, IngestError
from knowhub.ingest.identity import stored_tags
from knowhub.models import DocumentRecord
from knowhub.scope import (
    SCOPE_KEYS,
    DocumentScope,
    Scope,
    ScopeValueError,
    document_scope,
    record_scope,
)

__all__ = ["HiddenDocumentError", "WriteGuard", "checked_scope", "scope_stale", "scoped_metadata"]


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


class HiddenDocumentError(IngestError):
    """A document the writer's data scope does not see, or sees but may not change (shared
    wider than the writer's scope): left as it is, and not reported (a report naming a
    hidden one would tell the writer it exists)."""


@dataclass(frozen=True)
class WriteGuard:
    """What a writer of a data scope may touch: documents it sees, given scopes within its
    own (an unrestricted writer, every one)."""

    scope: Scope
    settings: Settings

    def visible(self, record: DocumentRecord) -> bool:
        """Whether the writer may touch ``record``: it sees it, and its scope is within the
        writer's (a shared or all-roles document is not one writer's to narrow or take)."""
        if self.scope.unrestricted:
            return True
        found = record_scope(record.metadata)
        return found is not None and self.scope.may_write(found)

    def check(self, record: DocumentRecord | None, tags: Mapping[str, str]) -> None:
        """Refuse writing ``record``'s document (None: a new one) with ``tags``.

        Raises:
            HiddenDocumentError: the writer does not see the document.
            AuthError: the tags would give it a scope wider than the writer's.
        """
        if self.scope.unrestricted:
            return
        if record is not None and not self.visible(record):
            raise HiddenDocumentError(f"{record.source}: not in the writer's data scope")
        document = checked_scope(tags, self.settings)
        if not self.scope.may_write(document):
            raise AuthError(
                f"its tags give it tenant={document.tenant or '(none)'}, dataset="
                f"{document.dataset or '(none)'}, visibility={document.visibility}, roles="
                f"{','.join(document.roles) or '*'}: outside this token's data scope; tag it "
                "within the scope (a tenant and dataset of the token's, its visibility or "
                "lower, some of its roles)"
            )
