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
    """The file is gone; an error that is not "no such file" (a folder that lost its
    permissions, an I/O error) keeps the document rather than prune or move it."""
    return _stat(path) is None


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
                found = _stat(record.disk_path)
                if found is None:
                    self._gone.append(record)
                elif isinstance(found, stat_result):
                    self._files[(found.st_dev, found.st_ino)] = record
        return self._taken

    def recorded_as(self, stat: stat_result) -> DocumentRecord | None:
        """The document recorded for this file under another path, if any."""
        self._load()
        return self._files.get((stat.st_dev, stat.st_ino))

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
        name = PurePosixPath(source.replace(os.sep, "/")).name
        same_bytes = [r for r in self._gone if r.doc_hash == doc_hash]
        ranked = (
            [r for r in same_bytes if r.source == source]
            + [r for r in same_bytes if PurePosixPath(r.source).name == name]
            + same_bytes
            + [r for r in self._gone if r.source == source]
        )
        if not ranked:
            return None
        self._gone.remove(ranked[0])
        return ranked[0]
