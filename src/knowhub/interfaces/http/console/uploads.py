"""Receiving the console's uploads: a multipart body streamed straight to files under
``DATA_DIR/uploads/{collection}/``, each held to ``server.max_upload_bytes`` and
``server.upload_extensions`` *while* it arrives (an oversized file is cut off at the limit and
its partial bytes deleted, never written whole and then checked).

File names come from the browser and are never trusted: :func:`safe_name` keeps the last path
component only, drops control characters and ``..``, caps the length; a name already taken
gets a ``-1``, ``-2`` … suffix, so an upload never overwrites an earlier one's file.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from python_multipart.multipart import MultipartParser, parse_options_header

from knowhub.errors import QueryError

__all__ = ["MAX_NAME_CHARS", "Received", "Rejected", "Upload", "receive", "safe_name"]

MAX_NAME_CHARS = 120  # of the stem and suffix together, well under any file system's limit
MAX_FIELD_CHARS = 10_000  # a form field (collection, tags) is small text, not a file
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:*?\"<>|]")


def safe_name(name: str) -> str:
    """A file name from a browser made safe to create: no folders, no control characters,
    no ``..``, not hidden, at most :data:`MAX_NAME_CHARS` characters (the extension kept)."""
    last = re.split(r"[/\\]", name)[-1]
    cleaned = _UNSAFE.sub("_", unicodedata.normalize("NFC", last)).strip(" .")
    cleaned = cleaned.replace("..", "_")
    stem, dot, suffix = cleaned.rpartition(".")
    if not dot:
        stem, suffix = cleaned, ""
    suffix = suffix[:16]
    stem = stem[: MAX_NAME_CHARS - len(suffix) - 1] or "upload"
    return f"{stem}.{suffix}" if suffix else stem


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


@dataclass
class Upload:
    """What one upload form sent: its fields and its files, kept or refused."""

    fields: dict[str, str] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)


@dataclass
class _Part:
    headers: dict[str, str] = field(default_factory=dict)
    name: str = ""
    filename: str | None = None
    value: bytearray = field(default_factory=bytearray)
    out: IO[bytes] | None = None
    path: Path | None = None
    size: int = 0
    refused: str | None = None


class _Receiver:
    """python-multipart's streaming parser's callbacks: each file part goes to its own file
    as its bytes arrive; a field part is kept in memory (capped)."""

    def __init__(
        self, folder: Callable[[dict[str, str]], Path], max_bytes: int, extensions: list[str]
    ) -> None:
        self.folder, self.max_bytes, self.extensions = folder, max_bytes, extensions
        self.upload = Upload()
        self.part = _Part()
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
        }

    def _begin(self) -> None:
        self.part = _Part()

    def _header_end(self) -> None:
        key = self._field.decode("latin-1").lower()
        self.part.headers[key] = self._value.decode("utf-8", errors="replace")
        self._field, self._value = bytearray(), bytearray()

    def _headers_done(self) -> None:
        _, options = parse_options_header(self.part.headers.get("content-disposition", ""))
        part = self.part
        part.name = options.get(b"name", b"").decode("utf-8", errors="replace")
        if b"filename" not in options:
            return
        part.filename = options[b"filename"].decode("utf-8", errors="replace")
        if not part.filename:  # an empty file input sends a part with no name and no bytes
            return
        suffix = Path(safe_name(part.filename)).suffix.lower()
        if suffix not in self.extensions:
            part.refused = (
                f"{suffix or 'no extension'} files are not accepted: upload one of "
                f"{' '.join(self.extensions)} (server.upload_extensions)"
            )
            return
        folder = self.folder(self.upload.fields)
        folder.mkdir(parents=True, exist_ok=True)
        part.path, part.out = _create(folder, safe_name(part.filename))

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
        if part.size > self.max_bytes:
            part.refused = (
                f"over {self.max_bytes:,} bytes (server.max_upload_bytes): split it or ask "
                "the operator to raise the limit"
            )
            self._discard(part)
            return
        part.out.write(data[start:end])

    def _end(self) -> None:
        part, upload = self.part, self.upload
        if part.filename is None:
            upload.fields[part.name] = part.value.decode("utf-8", errors="replace")
        elif part.refused is not None:
            upload.rejected.append(Rejected(part.filename, part.refused))
        elif part.out is not None and part.path is not None:
            part.out.close()
            if part.size == 0:
                part.path.unlink()
                upload.rejected.append(Rejected(part.filename, "empty file: nothing to ingest"))
            else:
                upload.received.append(Received(part.filename, part.path, part.size))

    def _discard(self, part: _Part) -> None:
        if part.out is not None and part.path is not None:
            part.out.close()
            part.path.unlink(missing_ok=True)
        part.out = None

    def abandon(self) -> None:
        """The body broke off or was refused: none of its files will be ingested, so none
        is kept (the one being written is incomplete anyway)."""
        self._discard(self.part)
        for done in self.upload.received:
            done.path.unlink(missing_ok=True)


def _create(folder: Path, name: str) -> tuple[Path, IO[bytes]]:
    """A new file ``name`` in ``folder``, or ``stem-N.ext`` when that is taken (``O_EXCL``:
    two uploads of one name at once cannot both get it)."""
    stem, suffix = Path(name).stem, Path(name).suffix
    for n in range(10_000):
        path = folder / (name if n == 0 else f"{stem}-{n}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        return path, os.fdopen(fd, "wb")
    raise QueryError(f"no free name for {name!r} in {folder}: remove old uploads")


async def receive(
    content_type: str,
    body: AsyncIterator[bytes],
    folder: Callable[[dict[str, str]], Path],
    max_bytes: int,
    extensions: list[str],
) -> Upload:
    """Parse a ``multipart/form-data`` ``body`` as it streams in, each file into
    ``folder(fields)`` (the fields sent before it: the form puts its collection first)."""
    kind, options = parse_options_header(content_type)
    if kind != b"multipart/form-data" or b"boundary" not in options:
        raise QueryError(
            f"expected multipart/form-data with a boundary, got {content_type or 'no type'!r}: "
            "send the upload form's files"
        )
    receiver = _Receiver(folder, max_bytes, extensions)
    parser = MultipartParser(options[b"boundary"], receiver.callbacks())  # type: ignore[arg-type]
    try:
        async for chunk in body:
            parser.write(chunk)
        parser.finalize()
    except BaseException:
        receiver.abandon()
        raise
    return receiver.upload
