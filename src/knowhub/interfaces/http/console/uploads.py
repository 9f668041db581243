"""Receiving the console's uploads: a multipart body streamed straight to files under
``DATA_DIR/uploads/{collection}/``, each held to ``server.max_upload_bytes`` and
``server.upload_extensions`` *while* it arrives (an oversized file is cut off at the limit and
its partial bytes deleted, never written whole and then checked), the whole body to
``server.max_upload_body_bytes``.

File names come from the browser and are never trusted: :func:`safe_name` keeps the last path
component only, drops control and bidirectional-override characters and ``..``, caps the
length (in characters and in UTF-8 bytes, which is what file systems count); a name already
taken gets a ``-1``, ``-2`` … suffix, so an upload never overwrites an earlier one's file.

Each file is written to a locked part file, fsynced, and then given its name
(:mod:`knowhub.ingest.uploads`), so what the job record queues is whole and on disk. A body
that is not multipart (or breaks off) is a 400, one over a limit a 413 naming the limit, a
full disk a 507 naming the data dir; none of the body's files is kept then.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import secrets
import unicodedata
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from knowhub.config.server import ServerSettings
from knowhub.errors import QueryError
from knowhub.ingest.loaders.compressed import is_compressed
from knowhub.ingest.uploads import PART_PREFIX, PART_SUFFIX, fsync_folder, make_folder
from knowhub.interfaces.http.console.disposition import parse_disposition
from knowhub.interfaces.http.errors import (
    DataDirNotWritableError,
    InsufficientStorageError,
    PayloadTooLargeError,
)

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_NAME_CHARS",
    "Opener",
    "Received",
    "Rejected",
    "Upload",
    "UploadLimits",
    "as_sent",
    "open_part",
    "receive",
    "safe_name",
    "storage_error",
]

log = logging.getLogger("knowhub.http")

MAX_NAME_CHARS = 120  # of the stem and suffix together
# In UTF-8 bytes: ext4, XFS and APFS allow 255 a name; room is left for a "-9999" suffix.
# 120 CJK characters are 360 bytes, so the byte cap is the one that binds for them.
MAX_NAME_BYTES = 200
MAX_FIELD_CHARS = 10_000  # a form field (collection, tags) is small text, not a file
# C0 and C1 controls, path and shell-hostile characters, and the bidirectional embeddings,
# overrides and isolates that make "evil\u202egpj.md" look like "evildm.jpg".
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\:*?\"<>|\u202a-\u202e\u2066-\u2069]")
_BOUNDARY = re.compile(r"[0-9A-Za-z'()+_,./:=? -]{1,70}")  # RFC 2046's bchars, 1-70 of them
_NO_ROOM = {
    errno.ENOSPC: "no space is left on the disk",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file system refuses a file this large (a file size limit: ulimit -f)",
}
_NOT_WRITABLE = {
    errno.EROFS: "its file system is mounted read-only",
    errno.EACCES: "the server's user may not write there",
    errno.EPERM: "the server's user may not write there",
}
Opener = Callable[[Path], tuple[Path, IO[bytes]]]
"""Opens a new part file in a folder (the seam where tests fill the disk)."""


def safe_name(name: str) -> str:
    """A file name from a browser made safe to create: no folders, no control characters,
    no ``..``, not hidden, at most :data:`MAX_NAME_CHARS` characters and
    :data:`MAX_NAME_BYTES` UTF-8 bytes (the extension kept)."""
    last = re.split(r"[/\\]", name)[-1]
    cleaned = _UNSAFE.sub("_", unicodedata.normalize("NFC", last)).strip(" .")
    cleaned = cleaned.replace("..", "_")
    stem, dot, suffix = cleaned.rpartition(".")
    if not dot:
        stem, suffix = cleaned, ""
    suffix = suffix[:16]
    room = MAX_NAME_BYTES - len(suffix.encode()) - 1
    stem = stem[: MAX_NAME_CHARS - len(suffix) - 1].encode()[:room].decode(errors="ignore")
    stem = stem.rstrip(" .") or "upload"
    return f"{stem}.{suffix}" if suffix else stem


@dataclass(frozen=True)
class UploadLimits:
    """What one upload may send: each file's bytes, the whole body's, the extensions."""

    file_bytes: int
    body_bytes: int
    extensions: list[str]

    @classmethod
    def of(cls, server: ServerSettings, extensions: list[str] | None = None) -> UploadLimits:
        return cls(
            server.max_upload_bytes,
            server.max_upload_body_bytes,
            server.upload_extensions if extensions is None else extensions,
        )


@dataclass(frozen=True)
class Received:
    """A file stored under the uploads folder: the name it was sent as, where it now is."""

    sent_as: str
    path: Path
    size: int


@dataclass(frozen=True)
class Rejected:
    """A file refused, and why (nothing of it was kept)."""

    sent_as: str
    reason: str


def as_sent(text: str, received: Iterable[Received]) -> str:
    """``text`` (an error's) with each received file's path on this server replaced by the
    name it was sent as: the uploader knows that one, the server's folders are not theirs."""
    for done in received:
        for path in (str(done.path.resolve()), str(done.path)):
            text = text.replace(path, done.sent_as)
    return text


@dataclass
class Upload:
    """What one upload form sent: its fields and its files, kept or refused.

    Each received file stays open and locked until :meth:`release`: until its job's record is
    written, a file nothing else names looks like one a stopped upload left, which ``verify
    --fix`` would ingest (and the upload, refused after all, then delete).
    """

    fields: dict[str, str] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    held: list[IO[bytes]] = field(default_factory=list, repr=False)

    def release(self) -> None:
        """Unlock the received files: their job's record is written, or they are deleted."""
        for handle in self.held:
            handle.close()
        self.held.clear()


@dataclass
class _Part:
    headers: dict[str, bytes] = field(default_factory=dict)
    name: str = ""
    filename: str | None = None
    value: bytearray = field(default_factory=bytearray)
    out: IO[bytes] | None = None
    path: Path | None = None  # the part file, until the file is whole
    folder: Path | None = None
    size: int = 0
    refused: str | None = None
    too_big: bool = False


def open_part(folder: Path) -> tuple[Path, IO[bytes]]:
    """A new part file in ``folder``, locked while open: ``verify`` and a server start tell
    a file still arriving from one an interrupted upload left."""
    path = folder / f"{PART_PREFIX}{secrets.token_hex(8)}{PART_SUFFIX}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: verify's probe holds it for an instant only
    return path, os.fdopen(fd, "wb")


class _Receiver:
    """python-multipart's streaming parser's callbacks: each file part goes to its own file
    as its bytes arrive; a field part is kept in memory (capped)."""

    def __init__(
        self, folder: Callable[[dict[str, str]], Path], limits: UploadLimits, opener: Opener
    ) -> None:
        self.folder, self.limits, self.opener = folder, limits, opener
        self.upload = Upload()
        self.part = _Part()
        self.folders: set[Path] = set()
        self.closed = False  # the closing boundary came: the body is whole
        self._field, self._value = bytearray(), bytearray()

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._begin,
            "on_header_field": lambda d, s, e: self._field.extend(d[s:e]),
            "on_header_value": lambda d, s, e: self._value.extend(d[s:e]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done,
            "on_part_data": self._data,
            "on_part_end": self._end,
            "on_end": self._closed,
        }

    def _begin(self) -> None:
        self.part = _Part()

    def _closed(self) -> None:
        self.closed = True

    def _header_end(self) -> None:
        key = self._field.decode("latin-1").lower()
        self.part.headers[key] = bytes(self._value)  # raw: see disposition.py for why
        self._field, self._value = bytearray(), bytearray()

    def _headers_done(self) -> None:
        sent = parse_disposition(self.part.headers.get("content-disposition", b""))
        part = self.part
        part.name, part.filename = sent.name, sent.filename
        if not part.filename:  # a field, or an empty file input (no name and no bytes)
            return
        suffix = Path(safe_name(part.filename)).suffix.lower()
        if suffix not in self.limits.extensions:
            part.refused = (
                f"{suffix or 'no extension'} files are not accepted: upload one of "
                f"{' '.join(self.limits.extensions)} (server.upload_extensions)"
            )
            return
        part.folder = self.folder(self.upload.fields)
        make_folder(part.folder)
        part.path, part.out = self.opener(part.folder)

    def _data(self, data: bytes, start: int, end: int) -> None:
        part = self.part
        if part.filename is None:
            if len(part.value) + end - start > MAX_FIELD_CHARS:
                raise QueryError(f"form field {part.name!r} is over {MAX_FIELD_CHARS} bytes")
            part.value.extend(data[start:end])
            return
        if part.out is None:
            return
        part.size += end - start
        if part.size > self.limits.file_bytes:
            part.refused, part.too_big = _file_too_big(self.limits.file_bytes), True
            self._discard(part)
            return
        part.out.write(data[start:end])

    def _end(self) -> None:
        part, upload = self.part, self.upload
        if part.filename is None:
            upload.fields[part.name] = part.value.decode("utf-8", errors="replace")
        elif part.refused is not None:
            upload.rejected.append(Rejected(part.filename, part.refused))
        elif part.size == 0:
            self._discard(part)
            if part.filename:
                upload.rejected.append(Rejected(part.filename, "empty file: nothing to ingest"))
        elif part.out is not None and part.path is not None and part.folder is not None:
            path = self._publish(part, part.out, part.path, part.folder)
            upload.received.append(Received(part.filename, path, part.size))

    def _publish(self, part: _Part, out: IO[bytes], partial: Path, folder: Path) -> Path:
        """The whole file, on disk (fsynced), under its name; the part file gone. It stays
        open, so locked, until the upload is released (see :class:`Upload`)."""
        out.flush()
        os.fsync(out.fileno())
        path, placeholder = _claim(folder, safe_name(part.filename or ""))
        try:
            partial.replace(path)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        finally:
            os.close(placeholder)
        self.upload.held.append(out)
        part.out = part.path = None
        self.folders.add(folder)
        return path

    def _discard(self, part: _Part) -> None:
        if part.out is not None:
            with contextlib.suppress(OSError):  # its buffer's flush fails on a full disk again
                part.out.close()
        if part.path is not None:
            part.path.unlink(missing_ok=True)
        part.out = part.path = None

    def finish(self) -> None:
        """Make the new files' names durable (their folders' entries)."""
        for folder in self.folders:
            fsync_folder(folder)

    def abandon(self) -> None:
        """The body broke off or was refused: none of its files will be ingested, so none
        is kept (the one being written is incomplete anyway)."""
        self._discard(self.part)
        for done in self.upload.received:
            done.path.unlink(missing_ok=True)
        self.upload.release()  # only once deleted: never a moment unlocked and there


def _file_too_big(limit: int) -> str:
    return (
        f"over {limit:,} bytes (server.max_upload_bytes, the limit for one file): split it, "
        "or ask the operator to raise server.max_upload_bytes"
    )


def _claim(folder: Path, name: str) -> tuple[Path, int]:
    """A new, empty file ``name`` in ``folder``, or ``stem-N.ext`` when that is taken
    (``O_EXCL``: two uploads of one name at once cannot both get it), and its descriptor,
    locked until the whole file takes its place (verify skips a locked file); a compressed
    file's number goes before both its suffixes (``README-1.md.gz`` is still read as Markdown)."""
    suffix = Path(name).suffix
    if is_compressed(name):
        suffix = Path(Path(name).stem).suffix + suffix
    stem = name[: len(name) - len(suffix)]
    for n in range(10_000):
        path = folder / (name if n == 0 else f"{stem}-{n}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: verify's probe holds it for an instant only
        return path, fd
    raise QueryError(f"no free name for {name!r} in its collection's uploads: remove old ones")


def _boundary(content_type: str) -> bytes:
    kind, options = parse_options_header(content_type)
    boundary = options.get(b"boundary", b"")
    if kind != b"multipart/form-data" or not _BOUNDARY.fullmatch(boundary.decode("latin-1")):
        raise QueryError(
            f"expected multipart/form-data with a boundary of 1 to 70 letters, digits or "
            f"'()+_,-./:=? (RFC 2046), got {content_type[:200] or 'no type'!r}: send the "
            "upload form's files"
        )
    return boundary


async def receive(
    content_type: str,
    body: AsyncIterator[bytes],
    folder: Callable[[dict[str, str]], Path],
    limits: UploadLimits,
    opener: Opener = open_part,
) -> Upload:
    """Parse a ``multipart/form-data`` ``body`` as it streams in, each file into
    ``folder(fields)`` (the fields sent before it: the form puts its collection first).

    Raises:
        QueryError: the body is not multipart/form-data (400).
        PayloadTooLargeError: the body is over ``limits.body_bytes`` (413).
        InsufficientStorageError: the disk is full (507).
    """
    receiver = _Receiver(folder, limits, opener)
    parser = MultipartParser(_boundary(content_type), receiver.callbacks())  # type: ignore[arg-type]
    total = 0
    try:
        async for chunk in body:
            # Up to the limit first: the part it cuts into says which limit refused the body.
            parser.write(chunk[: max(limits.body_bytes - total, 0)])
            total += len(chunk)
            if total > limits.body_bytes:
                raise _over_limit(receiver.part, limits)
        parser.finalize()  # which says nothing of a body cut short: the closing boundary does
        if not receiver.closed:
            raise QueryError(
                "the upload is not valid multipart/form-data: its body ends before its closing "
                "boundary (cut short?): send it again"
            )
        receiver.finish()
    except BaseException as exc:
        receiver.abandon()
        answer = _answer(exc, receiver.part)
        if answer is None:
            raise
        raise answer from exc
    return receiver.upload


def _over_limit(part: _Part, limits: UploadLimits) -> PayloadTooLargeError:
    """The limit that refused the body: the file's, when a file over it is what went on."""
    if part.too_big:
        return PayloadTooLargeError(f"{part.filename}: {_file_too_big(limits.file_bytes)}")
    return PayloadTooLargeError(
        f"this upload is over {limits.body_bytes:,} bytes in all (server.max_upload_body_bytes, "
        "the limit for all the files of one upload together): upload fewer files at a time, "
        "or ask the operator to raise server.max_upload_body_bytes"
    )


def _answer(exc: BaseException, part: _Part) -> Exception | None:
    """What a failed body is answered with: bad input, a full disk (None: ``exc`` as is)."""
    if isinstance(exc, FormParserError):
        return QueryError(
            f"the upload is not valid multipart/form-data ({exc}): send the upload form's "
            "files, or a body a multipart library wrote"
        )
    if isinstance(exc, OSError):
        return storage_error(exc, repr(part.filename or "the upload"))
    return None


def storage_error(
    exc: OSError, what: str
) -> InsufficientStorageError | DataDirNotWritableError | None:
    """A 507 naming the data dir, not the path, when ``exc`` says the disk is full, a 503
    when the data dir cannot be written (None for any other error); the path goes to the
    server's log, for its operator."""
    if exc.errno in _NOT_WRITABLE:
        log.error("an upload was refused: the data directory is not writable (%s)", exc)
        return DataDirNotWritableError(
            f"the data directory (server.data_dir) is not writable: "
            f"{_NOT_WRITABLE[exc.errno]}. {what} was not stored, and none of this upload's "
            "files was kept; the server's operator must make server.data_dir writable by the "
            "server, then upload again"
        )
    if exc.errno not in _NO_ROOM:
        return None
    log.warning("an upload was refused: %s (%s)", _NO_ROOM[exc.errno], exc)
    return InsufficientStorageError(
        f"{_NO_ROOM[exc.errno]} of the data directory (server.data_dir): {what} was not "
        "stored, and none of this upload's files was kept; free space there (or move "
        "server.data_dir to a bigger disk), then upload again"
    )
