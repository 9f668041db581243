"""Which stored document a file is: its id, a move from a vanished file, and its tags.

One file on disk is one document, recorded under its absolute path. A file whose path has
no record may still be a recorded file reached by another spelling (a symlinked folder, a
hard link): it is that document, under its recorded path. Otherwise it is a *move* of a
document whose file has vanished when it has the same bytes
(the same source preferred, then the same file name), or failing that the same source (a
folder renamed and a file edited in it): the document keeps its id, and so its chunk ids,
and is written under the new path in the write that removes the old one.

A document's id is derived from its source and content hash when it is first recorded,
made unique in the collection by a counter, and kept from then on: two copies of one file
never share chunk ids, and the same corpus ingested twice gets the same ids.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from os import stat_result
from pathlib import Path, PurePosixPath

from knowhub.ingest.members import container_path, is_member_path
from knowhub.models import DocumentRecord
from knowhub.providers.stores.base import Store

__all__ = ["Identities", "merged_tags", "stored_tags", "vanished"]


def stored_tags(record: DocumentRecord | None) -> dict[str, str]:
    """The tags a document was last given (none for no document)."""
    tags = record.metadata.get("tags") if record is not None else None
    return dict(tags) if isinstance(tags, Mapping) else {}


def merged_tags(stored: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """``stored`` updated by ``given``, where an empty value removes its key: tags persist
    until a run changes them, so re-ingesting without ``--tag`` keeps them."""
    merged = {**stored, **given}
    return {key: value for key, value in merged.items() if value != ""}


def vanished(path: str) -> bool:
    """The file is gone (a member's: its archive); an error that is not "no such file" (a
    folder that lost its permissions, an I/O error) keeps the document rather than prune or
    move it. A member gone from an archive still there is the run's to tell."""
    return _stat(container_path(path)) is None


def _stat(path: str) -> stat_result | bool | None:
    """The file's stat; None when it is gone, True when it cannot be told (kept)."""
    try:
        return Path(path).stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return True


class Identities:
    """One run's view of the collection's documents, read at the first file without a
    record (a run over unchanged files never reads them)."""

    def __init__(self, store: Store, cid: int) -> None:
        self._store = store
        self._cid = cid
        self._taken: set[str] | None = None
        self._gone: list[DocumentRecord] = []
        self._files: dict[tuple[int, int], DocumentRecord] = {}  # by (device, inode)

    def _load(self) -> set[str]:
        if self._taken is None:
            records = self._store.records(self._cid)
            self._taken = {r.doc_id for r in records}
            for record in records:
                found = _stat(container_path(record.disk_path))  # once: as vanished() would
                if found is None:
                    self._gone.append(record)
                elif isinstance(found, stat_result):
                    self.remember(found, record)  # a member's is its archive's: not kept
        return self._taken

    def remember(self, stat: stat_result, record: DocumentRecord) -> None:
        """``record`` is the document of the file ``stat`` describes (so another spelling of
        it later in the run finds it). Inode 0 is what some network and FUSE file systems
        give every file: no identity to go by."""
        if stat.st_ino and not is_member_path(record.disk_path):  # a member has no inode
            self._files[(stat.st_dev, stat.st_ino)] = record

    def recorded_as(self, path: str, stat: stat_result) -> DocumentRecord | None:
        """The document recorded for this file under another path, if any: the same inode
        reached through a link (the two paths resolve alike, or the file has several hard
        links), never a mere inode coincidence (file systems that reuse or invent them)."""
        self._load()
        record = self._files.get((stat.st_dev, stat.st_ino)) if stat.st_ino else None
        if record is None:
            return None
        if stat.st_nlink > 1 or os.path.realpath(record.disk_path) == os.path.realpath(path):
            return record
        return None

    def new_id(self, source: str, doc_hash: str) -> str:
        """A document id no other document of the collection has."""
        taken = self._load()
        for n in range(len(taken) + 1):  # at most that many can collide
            digest = hashlib.sha256(f"{source}\0{doc_hash}\0{n}".encode()).hexdigest()[:16]
            if digest not in taken:
                taken.add(digest)
                return digest
        raise AssertionError("unreachable: a free id exists among len(taken) + 1")

    def claim_move(self, source: str, doc_hash: str) -> DocumentRecord | None:
        """The vanished document a new file at ``source`` with ``doc_hash`` moved from, if
        any; claimed, so no other file of the run moves from it too."""
        self._load()
        # Gone when the run began; a file back since (an editor's delete-then-rename save)
        # is no move's origin.
        self._gone = [r for r in self._gone if vanished(r.disk_path)]
        name = PurePosixPath(source.replace(os.sep, "/")).name
        same_bytes = [r for r in self._gone if r.doc_hash == doc_hash]
        ranked = (
            [r for r in same_bytes if r.source == source]
            + [r for r in same_bytes if PurePosixPath(r.source).name == name]
            + same_bytes
            # Other bytes at the same source: only a folder renamed (its old root gone too),
            # or any README.md deleted in one folder would "move" to another folder's.
            + [r for r in self._gone if r.source == source and vanished(r.folder)]
        )
        if not ranked:
            return None
        self._gone.remove(ranked[0])
        return ranked[0]
