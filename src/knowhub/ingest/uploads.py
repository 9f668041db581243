"""Where the console's uploads live in the data dir, and the queue that makes them durable.

An upload's files are kept under ``DATA_DIR/uploads/{collection}/`` and indexed from there.
Each file arrives in a hidden ``.upload-….part`` file, locked (``flock``) while it is written,
and takes its name only once whole, so a server killed mid-upload leaves a part file, never a
truncated document; it stays locked until its upload's record is written (or the upload is
refused and it is deleted), so verify never takes it for a leftover. Before the server
answers 202, the upload's ingest is queued: a record in ``DATA_DIR/upload-jobs/{id}.json``
(written to a temporary file, fsynced, renamed), locked by the process that runs it and
deleted once its ingest has ended. A record nobody holds is an
ingest that a stop interrupted: the HTTP server resumes it when it starts (until it is given
up), and ``knowhub verify`` reports what is left (:func:`leftovers`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from knowhub.checks import check_collection_name
from knowhub.errors import QueryError
from knowhub.scope import ANY, UNRESTRICTED, Scope

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
    "is_part",
    "leftovers",
    "make_folder",
    "uploads_folder",
]

log = logging.getLogger("knowhub.ingest")

_T = TypeVar("_T")
_JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
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
    attempts: int = 1  # runs begun, the first included: one a stop cuts short too often
    scope: Scope = UNRESTRICTED
    # Cut short too often (a file of it may stop the server): no start resumes it, verify
    # reports it, and ``verify --fix`` ingests it with its tags, as its uploader.
    given_up: bool = False

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
    def from_dict(cls, raw: object, data_dir: Path) -> QueuedUpload:
        """Back from :meth:`to_dict`, checked: whoever can write the data dir can write a
        record, and a resumed record's files are ingested as its uploader (and deleted when
        they fail), so each must be a whole file of its collection's uploads folder.

        Raises:
            ValueError: the record is not one :meth:`to_dict` wrote; the message says why.
        """
        record = _typed(raw, dict, "the record")
        collection = _typed(record.get("collection"), str, "collection")
        try:
            check_collection_name(collection)
        except QueryError as exc:
            raise ValueError(str(exc)) from exc
        folder = uploads_folder(data_dir, collection)
        files = [_file(f, data_dir, folder) for f in _typed(record.get("files"), list, "files")]
        tags = _typed(record.get("tags"), dict, "tags")
        attempts = _typed(record.get("attempts"), int, "attempts")
        return cls(
            _job_id(record.get("id")),
            collection,
            {_typed(k, str, "a tag"): _typed(v, str, f"tag {k!r}") for k, v in tags.items()},
            files,
            attempts,
            _scope(_typed(record.get("scope"), dict, "scope")),
            _typed(record.get("given_up", False), bool, "given_up"),
        )


def _typed(value: Any, kind: type[_T], what: str) -> _T:
    """``value`` if it is a ``kind`` (a bool is no int here), else a ValueError."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{what} is {type(value).__name__}, not {kind.__name__}")
    return value


def _job_id(value: object) -> str:
    job = _typed(value, str, "id")
    if not _JOB_ID.fullmatch(job):  # it goes into logs and the job's URL
        raise ValueError(f"id {job[:80]!r} is not a job id (letters, digits, '-', '_')")
    return job


def _scope(raw: dict[str, Any]) -> Scope:
    """The uploader's scope; ``None`` in a dimension is unrestricted there (:func:`to_dict`)."""
    limits = {}
    for key in ("tenants", "datasets", "roles"):
        value = raw.get(key)
        names = [ANY] if value is None else _typed(value, list, f"scope {key}")
        limits[key] = [_typed(name, str, f"a name in scope {key}") for name in names]
    visibility = _typed(raw.get("max_visibility"), str, "scope max_visibility")
    return Scope.of(limits["tenants"], limits["datasets"], visibility, limits["roles"])


def _file(raw: object, data_dir: Path, folder: Path) -> QueuedFile:
    """A queued file, if it is a whole file of ``folder`` (not a part file still arriving,
    not one of ``faq/``, not anywhere a ``..``, an absolute path or a link leads)."""
    entry = _typed(raw, dict, "a file")
    name = _typed(entry.get("name"), str, "a file's name")
    path = _typed(entry.get("path"), str, "a file's path")
    where = (Path(data_dir).absolute() / path).resolve()
    if where.parent != folder.resolve() or is_part(where.name):
        raise ValueError(f"file {path[:200]!r} is not an upload of {folder}")
    return QueuedFile(name, path)


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
        make_folder(self.folder)
        record = self.folder / f"{upload.id}.json"
        temporary = record.with_suffix(".tmp")
        held = None
        try:
            with temporary.open("w", encoding="utf-8") as out:
                json.dump(upload.to_dict(), out, ensure_ascii=False)
                out.flush()
                os.fsync(out.fileno())
            held = _hold(temporary, upload)
            temporary.replace(record)
            held.record = record
            fsync_folder(self.folder)
        except BaseException:
            if held is not None:  # a record half-made is no record: its name goes, its lock
                held.done()
            temporary.unlink(missing_ok=True)
            raise
        return held

    def interrupted(self) -> Iterator[Held]:
        """Each record no process holds (its ingest was cut short), now held by the caller;
        one that does not read is logged and left for verify to report."""
        for record in self._records():
            handle = _open(record)
            held = None if handle is None else self._take(record, handle)
            if held is not None:
                yield held

    def _take(self, record: Path, handle: IO[str]) -> Held | None:
        """``record``, opened as ``handle``, locked and read; None (``handle`` closed) when
        another process holds it, when it is gone (its ingest ended, the record deleted,
        between the open and the lock: the lock is then on a file no longer the record, and
        its job would run twice), or when it does not read."""
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            opened, now = os.fstat(handle.fileno()), record.stat()
            if (opened.st_dev, opened.st_ino) != (now.st_dev, now.st_ino) or not opened.st_nlink:
                handle.close()
                return None
            handle.seek(0)  # read under the lock: its attempts are the last run's
            upload = QueuedUpload.from_dict(json.load(handle), self.data_dir)
        except (BlockingIOError, FileNotFoundError):
            handle.close()
            return None
        except _UNREADABLE as exc:
            handle.close()
            log.error(
                "upload record %s is not resumed: %s (`knowhub verify` reports it: fix or "
                "delete the record; its files stay in %s/)",
                record,
                exc,
                UPLOADS_DIR,
            )
            return None
        return Held(upload, record, handle)

    def rewrite(self, held: Held, upload: QueuedUpload) -> None:
        """Replace a held record's content (its attempts count) in place, durably: written
        over the old, then cut to length, so it is never empty (it never gets shorter)."""
        held.handle.seek(0)
        json.dump(upload.to_dict(), held.handle, ensure_ascii=False)
        held.handle.truncate()
        held.handle.flush()
        os.fsync(held.handle.fileno())
        held.upload = upload

    def remove(self, record: Path) -> bool:
        """Delete ``record`` unless a process holds it (verify's repair, once its upload's
        files are in); whether it is gone."""
        handle = _open(record)
        held = None if handle is None else self._take(record, handle)
        if held is not None:
            held.done()
            fsync_folder(self.folder)
        return held is not None or not record.exists()

    def records(self) -> tuple[dict[Path, QueuedUpload], dict[Path, str]]:
        """Every record, held or not: those that read, and why each other one does not."""
        read: dict[Path, QueuedUpload] = {}
        unreadable: dict[Path, str] = {}
        for record in self._records():
            try:
                read[record] = self._read(record)
            except FileNotFoundError:
                continue
            except _UNREADABLE as exc:
                unreadable[record] = str(exc) or type(exc).__name__
        return read, unreadable

    def _records(self) -> list[Path]:
        return sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []

    def _read(self, record: Path) -> QueuedUpload:
        raw = json.loads(record.read_text(encoding="utf-8"))
        return QueuedUpload.from_dict(raw, self.data_dir)


# A record that is not JSON, or not what to_dict wrote; RecursionError: nested too deep.
_UNREADABLE = (OSError, ValueError, RecursionError)


def _open(record: Path) -> IO[str] | None:
    """``record`` opened to be locked (kept open: the lock lasts as long), or None if gone."""
    try:
        return record.open("r+", encoding="utf-8")
    except FileNotFoundError:
        return None


def _hold(record: Path, upload: QueuedUpload) -> Held:
    """A record no other process can have yet (just written), opened and locked."""
    handle = record.open("r+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        handle.close()
        raise
    return Held(upload, record, handle)


def is_part(name: str) -> bool:
    """Whether ``name`` is a part file's (a file still arriving, or one a stop cut off)."""
    return name.startswith(PART_PREFIX) and name.endswith(PART_SUFFIX)


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


def make_folder(folder: Path) -> None:
    """``folder`` and the folders above it that are missing, each new one's name made durable
    (an fsync of the folder it was made in): a file fsynced in a folder whose own entry a
    power cut loses is lost with it."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for new in reversed(missing):
        new.mkdir(exist_ok=True)
        fsync_folder(new.parent)


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
    given_up: dict[Path, Path] = field(default_factory=dict)  # file → its given-up record


def leftovers(data_dir: Path, collection: str, indexed: set[Path]) -> Leftovers:
    """The files of ``collection``'s uploads folder that none of ``indexed`` (resolved paths
    of its documents) is: queued for ingest, given up, left half-received, or never indexed.
    Files being received now (locked until their record is written) are none of these;
    ``faq/`` holds FAQ files, not documents."""
    folder = uploads_folder(data_dir, collection)
    found = Leftovers()
    if not folder.is_dir():
        return found
    records = Queue(data_dir).records()[0]
    owner = {
        path.resolve(): record
        for record, upload in records.items()
        for path in upload.paths(data_dir)
    }
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        resolved = path.resolve()
        if resolved in indexed:
            continue
        if is_part(path.name):
            if not held_elsewhere(path):
                found.partial.append(path)
        elif resolved in owner and records[owner[resolved]].given_up:
            found.given_up[path] = owner[resolved]
        elif resolved in owner:
            found.queued[path] = records[owner[resolved]].id
        elif not held_elsewhere(path):  # held: an upload still arriving, its record unwritten
            found.unindexed.append(path)
    return found
