"""Tags and data scope written onto a document as indexed, without reading its file again.

A new tag or scope is normally applied by reading the file again, as any change is. Some
documents cannot be read again without losing what was indexed: text OCR read while OCR
cannot run now (a re-read would drop the scanned pages), or a file that no longer loads (a
run that fails it keeps the old document). Their tags and scope must still follow the
settings — a scope left broader than the owner now wants is a leak — so they are written
onto the stored chunks and record as they are: same text, vectors and lexical rows, the
metadata rewritten, in one atomic ``replace_document``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import StoreError
from knowhub.ingest.discover import Candidate
from knowhub.ingest.extraction import Extraction
from knowhub.ingest.identity import merged_tags, stored_tags
from knowhub.ingest.scoping import WriteGuard, checked_scope, scope_stale, scoped_metadata
from knowhub.models import Chunk, DocumentRecord
from knowhub.providers.stores.base import Store
from knowhub.scope import SCOPE_KEYS
from knowhub.surrogates import escape_surrogates

__all__ = ["InPlace"]


class InPlace:
    """One run's rewrites of tags and scope onto documents it cannot (safely) read again."""

    def __init__(
        self,
        store: Store,
        cid: int,
        settings: Settings,
        tags: dict[str, str],
        extraction: Extraction,
        key_of: Callable[[Chunk], str],
        guard: WriteGuard,
    ) -> None:
        self.store = store
        self.cid = cid
        self.settings = settings
        self.tags = tags  # the run's: they update each document's stored tags
        self.extraction = extraction
        self.key_of = key_of  # a chunk's embedding-cache key
        self.guard = guard

    def rewrote(self, candidate: Candidate, failed: bool = False) -> bool:
        """Whether the candidate's document needed new tags or scope and got them in place:
        before reading when a re-read would lose text OCR read (its file unchanged), or
        after a re-read ``failed``."""
        old = self.store.record(self.cid, escape_surrogates(candidate.path))
        if old is None or not self.guard.visible(old):  # a hidden one: integrity says so
            return False
        tags = merged_tags(stored_tags(old), self.tags)
        if tags == stored_tags(old) and not scope_stale(old, self.settings):
            return False
        if not failed and (self.extraction.rereadable(old) or not _unchanged(old, candidate)):
            return False
        self.guard.check(old, tags)
        self._rewrite(old, tags)
        return True

    def _rewrite(self, old: DocumentRecord, tags: dict[str, str]) -> None:
        stored = self.store.stored_chunks(self.cid, old.path)
        if len(stored) != old.chunk_count or any(
            s.vector is None or s.tokens is None for s in stored
        ):
            raise StoreError(
                f"{old.source} is not whole in the index, so its new tags or scope cannot be "
                "written onto it: run `knowhub verify --fix`, then ingest again"
            )
        scope = checked_scope(tags, self.settings)
        before = stored_tags(old)
        chunks = [
            replace(s.chunk, metadata=scoped_metadata(_own(s.chunk, before), tags, scope))
            for s in stored
        ]
        own = old.metadata.get("knowhub")
        record = replace(
            old,
            metadata={
                **old.metadata,
                "tags": tags,
                "knowhub": {**(own if isinstance(own, dict) else {}), "scope": scope.to_dict()},
            },
        )
        vectors = np.stack([s.vector for s in stored if s.vector is not None])
        tokens = [s.tokens or "" for s in stored]
        keys = [self.key_of(chunk) for chunk in chunks]
        self.store.replace_document(self.cid, record, chunks, vectors, tokens, keys)


def _own(chunk: Chunk, tags: dict[str, str]) -> dict[str, Any]:
    """A chunk's metadata without the tags and scope it was given (the loader's and its
    own: a picture, an LLM's enrichment)."""
    return {k: v for k, v in chunk.metadata.items() if k not in tags and k not in SCOPE_KEYS}


def _unchanged(old: DocumentRecord, candidate: Candidate) -> bool:
    """The file still has the size and mtime it was indexed with (a changed file is read
    again, whatever is lost: its old text is not its text any more)."""
    try:
        stat = candidate.stat()
    except OSError:
        return False
    return (old.size, old.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
