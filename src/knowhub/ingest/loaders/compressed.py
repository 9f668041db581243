"""Compressed files (``.gz``, ``.bz2``, ``.xz``), read by the name inside.

Most of a Linux system's documentation ships compressed (``/usr/share/doc/*/README.md.gz``,
``changelog.Debian.gz``): such a file is read as its inner name says (``README.md.gz`` as
Markdown, ``guide.pdf.xz`` as a PDF). One whose inner name has a format of its own that
knowhub does not read (``manual.ps.gz``, ``setup.py.xz``) is not read, as it would not be
unpacked, nor is a tar archive (its files are not documents of their own here). One whose
inner name has no format (``NEWS.gz``, ``changelog.Debian.gz``, ``README.devmapper.gz``:
Debian's and upstreams' documentation) is read as plain text when it unpacks to text; a man
page's roff source (``tar.1.gz``) or a binary is not read, and says so.

Decompression stops at ``ingest.max_file_bytes``, however far the file would unpack (a few
hundred kilobytes of gzip can unpack to gigabytes), so memory stays bounded by that limit.
The file keeps its own name everywhere: its source, its citations, every message.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import mimetypes
import re
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from knowhub.errors import UnsupportedFileError
from knowhub.ingest.loaders.common import loader_error
from knowhub.surrogates import escape_surrogates

__all__ = [
    "COMPRESSED_EXTENSIONS",
    "decompress",
    "inner_reason",
    "inner_suffix",
    "text_check",
]

_FORMATS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
COMPRESSED_EXTENSIONS: frozenset[str] = frozenset(_FORMATS)
"""Lower-case extensions of the compressions knowhub unpacks (a file's last suffix)."""

# What a corrupt or cut file raises while it is read (gzip's BadGzipFile is an OSError).
_CORRUPT = (OSError, EOFError, zlib.error, lzma.LZMAError)
_CHUNK = 1 << 20  # read a megabyte at a time: read(n) allocates n bytes before reading any
_SNIFF = 8192  # bytes looked at to tell text from a binary or a roff source
# A roff source's first line: a comment (.\" or '\"), or a request such as .TH, .Dd or .so.
_ROFF = re.compile(rb"""[.'](?:\\"|[A-Za-z]{2}(?:[ \t]|$))""")
# Python's own table of file types, not the system's (/etc/mime.types): the same on every
# machine, so a name is read or skipped alike everywhere.
_FORMATS_KNOWN = mimetypes.MimeTypes(filenames=())


def inner_suffix(name: str) -> str:
    """The suffix under the compression's (lower-case: ``.md`` for ``README.md.gz``; ''
    for ``NEWS.gz``), or '' when ``name`` is not compressed."""
    path = PurePosixPath(name)
    if path.suffix.lower() not in COMPRESSED_EXTENSIONS:
        return ""
    return PurePosixPath(path.stem).suffix.lower()


def inner_reason(name: str) -> str | None:
    """Why a compressed ``name`` whose inner extension knowhub does not read is not read:
    a tar archive, or a format of its own (``.ps``, ``.py``); None when the inner name
    names no format (``NEWS``, ``changelog.Debian``), which is then read as text."""
    inner = inner_suffix(name)
    if inner == ".tar":
        return (
            "a compressed tar archive: knowhub does not unpack archives; "
            "extract it and ingest the folder"
        )
    if inner and _FORMATS_KNOWN.guess_type(f"x{inner}", strict=False)[0] is not None:
        return f"unsupported file type {inner}{PurePosixPath(name).suffix.lower()}"
    return None


def decompress(path: Path, data: bytes, max_bytes: int) -> bytes:
    """The bytes ``data`` (the file ``path``, compressed as its suffix says) unpack to.

    Raises:
        LoaderError: the file is corrupt or cut short, or it unpacks to more than
            ``max_bytes`` (read no further: a decompression bomb costs ``max_bytes``).
    """
    suffix = path.suffix.lower()
    parts: list[bytes] = []
    size = 0
    try:
        with _unpacking(suffix, io.BytesIO(data)) as stream:
            while size <= max_bytes and (part := stream.read(min(_CHUNK, max_bytes + 1 - size))):
                parts.append(part)
                size += len(part)
    except _CORRUPT as exc:
        raise loader_error(
            path, f"is not a valid {_FORMATS[suffix]} file ({exc}): download or compress it again"
        ) from exc
    if size > max_bytes:
        raise loader_error(
            path, f"decompresses to more than {max_bytes} bytes; raise ingest.max_file_bytes"
        )
    return b"".join(parts)


def _unpacking(suffix: str, raw: BinaryIO) -> io.BufferedIOBase:
    """A stream of what ``raw`` (compressed as ``suffix`` says) unpacks to."""
    if suffix == ".gz":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if suffix == ".bz2":
        return bz2.BZ2File(raw)
    return lzma.LZMAFile(raw)


def text_check(path: Path, data: bytes) -> None:
    """Refuse what a compressed file with no format of its own unpacked to, unless text.

    Raises:
        UnsupportedFileError: it is a man page's roff source, or binary.
    """
    head = data[:_SNIFF]
    first = next((line.strip() for line in head.splitlines() if line.strip()), b"")
    if _ROFF.match(first):
        inner = PurePosixPath(path.name).stem
        problem = (
            "a manual page's roff source, which knowhub does not typeset: save the page as "
            f"text (man -l {path.name} > {inner}.txt), which knowhub reads by its sections "
            "and options"
        )
    elif b"\x00" in head:
        problem = "decompresses to binary data, not text"
    else:
        return
    raise UnsupportedFileError(f"{escape_surrogates(str(path))}: {problem}", problem)
