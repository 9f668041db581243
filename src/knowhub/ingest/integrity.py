"""The integrity stage: which files changed since they were indexed, and which are gone.

Size and mtime as indexed mean unchanged without opening the file (as rsync and make trust
them); otherwise its bytes are read once and their sha256 decides. A file with the bytes of
a vanished document is that document, moved (:class:`~knowhub.ingest.identity.Identities`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

from knowhub.ingest.discover import Candidate
from knowhub.ingest.identity import Identities, merged_tags, stored_tags, vanished
from knowhub.ingest.loaders.reading import open_regular
from knowhub.ingest.scoping import WriteGuard
from knowhub.models import DocumentRecord
from knowhub.providers.stores.base import Store
from knowhub.surrogates import escape_surrogates

__all__ = ["Changed", "Integrity", "gone_documents", "renamed_folders"]


@dataclass
class Changed:
    """A file whose document is to be written: its bytes (read once), hash and identity."""

    key: str  # the path the store knows the document by
    source: str
    data: bytes
    doc_hash: str
    stat: os.stat_result  # of the file as it was read
    tags: dict[str, str]  # the stored ones updated by the run's
    old: DocumentRecord | None  # the document at this path (or another spelling of it)
    previous: DocumentRecord | None  # the vanished document this file is a move of
    outcome: str  # added, updated, retagged or moved


class Integrity:
    """Compares each file of one run with its document in collection ``cid``."""

    def __init__(
        self,
        store: Store,
        cid: int,
        identities: Identities,
        tags: dict[str, str],
        confine: Path | None,
        max_bytes: int,
        stale: Callable[[DocumentRecord], bool] = lambda record: False,
        guard: WriteGuard | None = None,
    ) -> None:
        self.store = store
        self.cid = cid
        self.identities = identities
        self.tags = tags  # given this run: they update each document's stored tags
        self.confine = confine  # files must still resolve inside it when they are opened
        self.max_bytes = max_bytes
        # Whether a document must be read again though its file is unchanged (extracted
        # before OCR or a vision model could: :mod:`knowhub.ingest.extraction`).
        self.stale = stale
        self.guard = guard  # a scoped writer's: only documents it sees, within its scope

    def check(self, candidate: Candidate) -> Changed | None:
        """The file's bytes when its document must be written; None when it is unchanged
        (a new mtime over the same bytes is recorded)."""
        path = Path(candidate.path)
        # The store knows the file by its path with undecodable name bytes escaped (SQLite
        # refuses lone surrogates); the file itself is opened by its real path.
        key, source = escape_surrogates(candidate.path), escape_surrogates(candidate.source)
        old = self.store.record(self.cid, key)
        first = candidate.stat()  # a stat never blocks; an unchanged file is not even opened
        member = candidate.member  # its bytes in hand; its stat its container's (no inode)
        if (
            old is None
            and member is None
            and (old := self.identities.recorded_as(candidate.path, first)) is not None
        ):
            key = old.path  # the file, reached by another spelling: its document stays one
        tags = merged_tags(stored_tags(old), self.tags)
        if self.guard is not None:
            self.guard.check(old, tags)
        same_tags = old is not None and stored_tags(old) == tags and not self.stale(old)
        if old and same_tags and S_ISREG(first.st_mode) and _same_file(old, first):
            return None
        if member is not None:
            stat, data = first, member.data
        else:
            stat, data = self._read(path, old if same_tags else None)
            if not data and old and same_tags and _same_file(old, stat):
                return None
        doc_hash = hashlib.sha256(data).hexdigest()
        if old and same_tags and old.doc_hash == doc_hash:
            self.store.touch(self.cid, key, stat.st_size, stat.st_mtime_ns)
            return None
        previous = None if old else self.identities.claim_move(source, doc_hash)
        if previous is not None and self.guard is not None and not self.guard.visible(previous):
            previous = None  # not a move of a document the writer does not see: a new one
        if previous is not None:  # a moved document keeps its tags, as a rewritten one does
            tags = merged_tags(stored_tags(previous), self.tags)
        outcome = _outcome(old, previous, doc_hash)
        if outcome == "retagged" and old is not None and self.stale(old):
            outcome = "updated"  # read again for its scans or pictures, not for its tags
        return Changed(key, source, data, doc_hash, stat, tags, old, previous, outcome)

    def _read(self, path: Path, old: DocumentRecord | None) -> tuple[os.stat_result, bytes]:
        """The file's stat as opened, and its bytes (none when ``old`` has its size and mtime).
        Never blocks, even if it became a FIFO; still inside the served folder once open."""
        with open_regular(path, self.confine) as file:
            if old is not None and _same_file(old, file.stat):
                return file.stat, b""
            return file.stat, file.read(self.max_bytes)


def gone_documents(
    store: Store, cid: int, roots: Sequence[Path] | None, passed_over: Collection[str]
) -> list[DocumentRecord]:
    """Documents under ``roots`` (None: anywhere) whose files are gone or now
    ``passed_over`` by discovery (a FIFO, a link leading out must not stay served)."""
    return [
        record
        for record in store.records(cid)
        if (record.path in passed_over or vanished(record.disk_path))
        and (roots is None or _inside(record.disk_path, roots))
    ]


def renamed_folders(moved_from: Collection[str]) -> list[Path]:
    """The folders among those documents ``moved_from`` that are gone: renamed into the
    run's paths, so that their documents not found again are gone too. A folder still there
    (a share unmounted, its mount point left empty; a file copied out of it) is no rename:
    its documents are kept."""
    return [Path(folder) for folder in sorted(moved_from) if vanished(folder)]


def _inside(path: str, roots: Sequence[Path]) -> bool:
    """``path`` lies under one of ``roots``, as spelled or with links resolved (a file
    recorded through a symlinked folder, pruned by a run on the folder it leads to)."""
    for root in roots:
        for where, folder in (
            (path, os.path.abspath(root)),
            (os.path.realpath(path), os.path.realpath(root)),
        ):
            if where == folder or where.startswith((folder.rstrip(os.sep) + os.sep, folder + "!/")):
                return True
    return False


def _same_file(old: DocumentRecord, stat: os.stat_result) -> bool:
    """Size and mtime as indexed: the fast path trusts them, as rsync and make do."""
    return (old.size, old.mtime_ns) == (stat.st_size, stat.st_mtime_ns)


def _outcome(old: DocumentRecord | None, previous: DocumentRecord | None, doc_hash: str) -> str:
    """What writing a file's document does: ``added``, ``updated``, ``retagged`` (the same
    bytes with other tags) or ``moved``."""
    if previous is not None:
        return "moved"
    if old is None:
        return "added"
    return "retagged" if old.doc_hash == doc_hash else "updated"
