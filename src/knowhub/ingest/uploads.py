"""Where the console's uploads live in the data dir, and the queue that makes them durable.

An upload's files are kept under ``DATA_DIR/uploads/{collection}/`` and indexed from there.
Each file arrives in a hidden ``.upload-….part`` file, locked (``flock``) while it is written,
and takes its name only once whole, so a server killed mid-upload leaves a part file, never a
truncated document. Before the server answers 202, the upload's ingest is queued: a record in
``DATA_DIR/upload-jobs/{id}.json`` (written to a temporary file, fsynced, renamed), locked by
the process that runs it and deleted once its ingest has ended. A record nobody holds is an
ingest that a stop interrupted: the HTTP server resumes it when it starts, and ``knowhub
verify`` reports what is left (:func:`leftovers`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from knowhub.scope import UNRESTRICTED, Scope

__all__ = [
    "PART_PREFIX",
    "PART_SUFFIX",
    "QUEUE_DIR",
    "UPLOADS_DIR",
    "Held",
    "Leftovers",
    "Queue",
    "QueuedFile",
    "QueuedUpload",
    "fsync_folder",
    "held_elsewhere",
    "leftovers",
    "uploads_folder",
]

UPLOADS_DIR = "uploads"
QUEUE_DIR = "upload-jobs"
PART_PREFIX, PART_SUFFIX = ".upload-", ".part"


def uploads_folder(data_dir: Path, collection: str) -> Path:
    """Where a collection's uploaded files are kept."""
    return Path(data_dir).absolute() / UPLOADS_DIR / collection


@dataclass(frozen=True)
class QueuedFile:
    """A file of a queued upload: the name it was sent as, where it is (data-dir relative)."""

    name: str
    path: str


@dataclass(frozen=True)
class QueuedUpload:
    """An upload whose ingest is queued: what to ingest, where, with which tags, and as whom
    (the uploader's data scope: a writer with a scope writes only within it, resumed or not)."""

    id: str
    collection: str
    tags: dict[str, str]
    files: list[QueuedFile]
    attempts: int = 0  # starts that resumed it: a file that kills the server stops at a limit
    scope: Scope = UNRESTRICTED

    def paths(self, data_dir: Path) -> list[Path]:
        return [Path(data_dir).absolute() / f.path for f in self.files]

    def to_dict(self) -> dict[str, Any]:
        scope = self.scope
        limits = {"tenants": scope.tenants, "datasets": scope.datasets, "roles": scope.roles}
        return {
            **{k: v for k, v in asdict(self).items() if k != "scope"},
            "scope": {
                **{k: None if v is None else sorted(v) for k, v in limits.items()},
                "max_visibility": scope.max_visibility,
            },
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> QueuedUpload:
        files = [QueuedFile(str(f["name"]), str(f["path"])) for f in raw["files"]]
        tags = {str(k): str(v) for k, v in raw["tags"].items()}
        scope = raw["scope"]
        limits = [
            None if scope[k] is None else frozenset(map(str, scope[k]))
            for k in ("tenants", "datasets", "roles")
        ]
        return cls(
            str(raw["id"]),
            str(raw["collection"]),
            tags,
            files,
            int(raw["attempts"]),
            Scope(limits[0], limits[1], str(scope["max_visibility"]), limits[2]),
        )


@dataclass
class Held:
    """A queued upload and the locked handle of its record (the lock says "being run")."""

    upload: QueuedUpload
    record: Path
    handle: IO[str] = field(repr=False)

    def done(self) -> None:
        """The upload's ingest has ended: its record goes."""
        self.record.unlink(missing_ok=True)
        self.handle.close()

    def release(self) -> None:
        """Let go of the record, keeping it (a stop cut the ingest short: resumed later)."""
        self.handle.close()


class Queue:
    """The upload records of one data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.folder = self.data_dir / QUEUE_DIR

    def add(self, upload: QueuedUpload) -> Held:
        """Write ``upload``'s record durably (temp file, fsync, rename, fsync of the folder)
        and hold it; raises OSError (a full disk) with nothing written."""
        self.folder.mkdir(parents=True, exist_ok=True)
        record = self.folder / f"{upload.id}.json"
        temporary = record.with_suffix(".tmp")
        try:
            with temporary.open("w", encoding="utf-8") as out:
                json.dump(upload.to_dict(), out, ensure_ascii=False)
                out.flush()
                os.fsync(out.fileno())
            held = _hold(temporary, upload)
            temporary.replace(record)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        held.record = record
        fsync_folder(self.folder)
        return held

    def interrupted(self) -> Iterator[Held]:
        """Each record no process holds (its ingest was cut short), now held by the caller."""
        for record in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                upload = _read(record)
            except (OSError, ValueError, TypeError, KeyError):
                continue  # unreadable: verify reports it
            with contextlib.suppress(BlockingIOError, FileNotFoundError):
                yield _hold(record, upload)

    def rewrite(self, held: Held, upload: QueuedUpload) -> None:
        """Replace a held record's content (its attempts count) in place, durably: written
        over the old, then cut to length, so it is never empty (it never gets shorter)."""
        held.handle.seek(0)
        json.dump(upload.to_dict(), held.handle, ensure_ascii=False)
        held.handle.truncate()
        held.handle.flush()
        os.fsync(held.handle.fileno())
        held.upload = upload

    def queued(self) -> list[QueuedUpload]:
        """Every readable record, held or not (for verify)."""
        found = []
        for record in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                found.append(_read(record))
        return found


def _read(record: Path) -> QueuedUpload:
    return QueuedUpload.from_dict(json.loads(record.read_text(encoding="utf-8")))


def _hold(record: Path, upload: QueuedUpload) -> Held:
    """``record`` opened and locked (BlockingIOError when another process holds it)."""
    handle = record.open("r+", encoding="utf-8")  # kept open: it holds the lock
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        handle.close()
        raise
    return Held(upload, record, handle)


def held_elsewhere(path: Path) -> bool:
    """Whether a process holds ``path``'s lock (a part file being written, a job running)."""
    try:
        with path.open("rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def fsync_folder(folder: Path) -> None:
    """Make the names created in ``folder`` durable (its entries, not only the files)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Leftovers:
    """What ``DATA_DIR/uploads/{collection}/`` holds that no document records."""

    unindexed: list[Path] = field(default_factory=list)  # whole files, never ingested
    partial: list[Path] = field(default_factory=list)  # part files an interrupted upload left
    queued: dict[Path, str] = field(default_factory=dict)  # file → the queued upload's id


def leftovers(data_dir: Path, collection: str, indexed: set[Path]) -> Leftovers:
    """The files of ``collection``'s uploads folder that none of ``indexed`` (resolved paths
    of its documents) is: queued for ingest, left half-received, or never indexed. Files
    being received now are none of these; ``faq/`` holds FAQ files, not documents."""
    folder = uploads_folder(data_dir, collection)
    found = Leftovers()
    if not folder.is_dir():
        return found
    waiting = {
        path.resolve(): upload.id
        for upload in Queue(data_dir).queued()
        for path in upload.paths(data_dir)
    }
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        resolved = path.resolve()
        if resolved in indexed:
            continue
        if path.name.startswith(PART_PREFIX) and path.name.endswith(PART_SUFFIX):
            if not held_elsewhere(path):
                found.partial.append(path)
        elif resolved in waiting:
            found.queued[path] = waiting[resolved]
        else:
            found.unindexed.append(path)
    return found
