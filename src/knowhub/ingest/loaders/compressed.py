"""Compressed files (``.gz``, ``.bz2``, ``.xz``), read by the name inside.

Most of a Linux system's documentation ships compressed (``/usr/share/doc/*/README.md.gz``,
``changelog.Debian.gz``): such a file is read as its inner name says (``README.md.gz`` as
Markdown, ``guide.pdf.xz`` as a PDF). One whose inner name has a format of its own that
knowhub does not read (``manual.ps.gz``, ``setup.py.xz``) is not read, as it would not be
unpacked (a compressed tar archive is an archive: :mod:`.archive`). One whose
inner name has no format (``NEWS.gz``, ``changelog.Debian.gz``, ``README.devmapper.gz``:
Debian's and upstreams' documentation) is read as plain text when it unpacks to text; a man
page's roff source (``tar.1.gz``) or a binary is not read, and says so.

Decompression stops at ``ingest.max_file_bytes``, however far the file would unpack (a few
hundred kilobytes of gzip can unpack to gigabytes), so memory stays bounded by that limit.
The file keeps its own name everywhere: its source, its citations, every message.
"""

from __future__ import annotations

import bz2
import codecs
import functools
import io
import lzma
import mimetypes
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

from knowhub.errors import UnsupportedFileError
from knowhub.ingest.loaders.common import loader_error
from knowhub.surrogates import escape_surrogates

__all__ = [
    "COMPRESSED_EXTENSIONS",
    "MAX_STREAMS",
    "SNIFF_BYTES",
    "Unpacking",
    "decompress",
    "format_suffix",
    "inner_reason",
    "inner_suffix",
    "is_compressed",
    "text_check",
    "unpack_errors",
]

_FORMATS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
COMPRESSED_EXTENSIONS: frozenset[str] = frozenset(_FORMATS)
"""Lower-case extensions of the compressions knowhub unpacks (a file's last suffix)."""

_CAT = {".gz": "zcat", ".bz2": "bzcat", ".xz": "xzcat"}
MAX_STREAMS = 10_000
"""Streams (gzip members) one compressed file may hold: a few in practice (pbzip2 writes one
per 900 kB), and each costs a header parse whatever it holds."""
_XZ_MEMORY = 256 << 20  # what an xz stream may take to unpack: xz -9 takes 65 MiB
# What a corrupt or cut file raises while it is read (bz2's "Invalid data stream" is an OSError).
_CORRUPT = (OSError, EOFError, zlib.error)
_CHUNK = 1 << 20  # unpack a megabyte at a time: decompress(n) allocates n bytes before any
_IN_CHUNK = 1 << 16
_NOT_PADDING = re.compile(rb"[^\x00]")
SNIFF_BYTES = 8192
"""Bytes looked at to tell text from a binary or a roff source."""
# A roff source's first line: a comment (.\" or '\", tbl's mark), or a request such as .TH,
# .Dd or .so. A request may open with ' too, but no man page's first line does, and prose
# can ('em all, 'tis).
_ROFF = re.compile(rb"""'\\"|\.(?:\\"|[A-Za-z]{2}(?:[ \t]|$))""")


@functools.cache
def _known_types() -> mimetypes.MimeTypes:
    """Python's own table of file types, not the system's (/etc/mime.types): the same on
    every machine, so a name is read or skipped alike everywhere. Built on first use: making
    one reads the system's tables into mimetypes' global one (init())."""
    return mimetypes.MimeTypes(filenames=())


def format_suffix(name: str) -> str:
    """The extension that says how ``name`` is read, lower-case: its own (``.md``), a
    compressed file's inner one (``.md`` for ``README.md.gz``), or '' (``NEWS.gz``)."""
    return inner_suffix(name) if is_compressed(name) else PurePosixPath(name).suffix.lower()


def is_compressed(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in COMPRESSED_EXTENSIONS


def inner_suffix(name: str) -> str:
    """The suffix under the compression's (lower-case: ``.md`` for ``README.md.gz``; ''
    for ``NEWS.gz``), or '' when ``name`` is not compressed."""
    path = PurePosixPath(name)
    if path.suffix.lower() not in COMPRESSED_EXTENSIONS:
        return ""
    return PurePosixPath(path.stem).suffix.lower()


def inner_reason(name: str) -> str | None:
    """Why a compressed ``name`` whose inner extension knowhub does not read is not read:
    a format of its own (``.ps``, ``.py``); None when the inner name
    names no format (``NEWS``, ``changelog.Debian``), which is then read as text."""
    inner = inner_suffix(name)
    if inner and _known_types().guess_type(f"x{inner}", strict=False)[0] is not None:
        return f"unsupported file type {inner}{PurePosixPath(name).suffix.lower()}"
    return None


def decompress(
    path: Path, data: bytes, max_bytes: int, check: Callable[[bytes], None] | None = None
) -> bytes:
    """The bytes ``data`` (the file ``path``, compressed as its suffix says) unpack to: every
    stream of it in turn (``gzip -c a >> f`` makes a file of two), zero padding between them
    skipped.

    What it costs is bounded by the file's size and ``max_bytes``: the text is held once
    (written into one buffer, returned without a copy), a file may hold at most
    :data:`MAX_STREAMS` streams, and an xz one may ask for at most 256 MiB of memory.

    Args:
        path: the file, named in messages; its suffix says the compression.
        data: its bytes.
        max_bytes: the most it may unpack to.
        check: given the first 8 kB unpacked (all, when less) before the rest is unpacked,
            raises when the file is not to be read (:func:`text_check`).

    Raises:
        LoaderError: the file is corrupt or cut short, it unpacks to more than
            ``max_bytes`` (read no further: a decompression bomb costs ``max_bytes``), or
            it is over the bounds above.
    """
    suffix = path.suffix.lower()
    unpacking = Unpacking(suffix, io.BytesIO(data))  # shares data's buffer: no copy
    with unpack_errors(path, suffix):
        if check is not None:
            unpacking.fill(SNIFF_BYTES - 1)
            check(unpacking.out.getvalue())
        unpacking.fill(max_bytes)
    if unpacking.out.tell() > max_bytes:
        raise loader_error(
            path, f"decompresses to more than {max_bytes} bytes; raise ingest.max_file_bytes"
        )
    return unpacking.out.getvalue()


@contextmanager
def unpack_errors(path: Path, suffix: str) -> Iterator[None]:
    """Turn what unpacking ``path`` (compressed as ``suffix`` says) raises into a
    :class:`LoaderError` saying what is wrong and what to do."""
    try:
        yield
    except lzma.LZMAError as exc:
        if "memory usage limit" not in str(exc).lower():
            raise loader_error(path, _corrupt(suffix, exc)) from exc
        raise loader_error(
            path,
            f"needs more than {_XZ_MEMORY >> 20} MiB of memory to unpack (a dictionary larger "
            "than xz -9 uses): unpack it, or compress it again with xz -9 or less",
        ) from exc
    except _CORRUPT as exc:
        raise loader_error(path, _corrupt(suffix, exc)) from exc
    except _TooManyStreamsError as exc:
        raise loader_error(
            path,
            f"is made of more than {MAX_STREAMS} {_FORMATS[suffix]} streams, more than a "
            f"document needs: unpack it and compress it again as one "
            f"({_CAT[suffix]} {path.name} | {_FORMATS[suffix]} > new{suffix})",
        ) from exc


def _corrupt(suffix: str, exc: BaseException) -> str:
    return f"is not a valid {_FORMATS[suffix]} file ({exc}): download or compress it again"


class _TooManyStreamsError(Exception):
    """More than :data:`MAX_STREAMS` streams in one file."""


class _Decoder(Protocol):
    """One stream's decompressor, as bz2's and lzma's are."""

    @property
    def eof(self) -> bool: ...
    @property
    def needs_input(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...
    def decompress(self, data: bytes | memoryview, max_length: int = -1) -> bytes: ...


class _GzipMember:
    """zlib's reader of one gzip member, shaped as bz2's and lzma's decompressors are (zlib
    hands back the input it had no room to unpack, where they keep it)."""

    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(wbits=31)  # 16 + 15: a gzip header and trailer
        self._more = False  # output was cut at max_length: more may come without input

    @property
    def eof(self) -> bool:
        return self._zlib.eof

    @property
    def needs_input(self) -> bool:
        return not self._more

    @property
    def unused_data(self) -> bytes:
        return self._zlib.unused_data

    def decompress(self, data: bytes | memoryview, max_length: int = -1) -> bytes:
        out = self._zlib.decompress(data or self._zlib.unconsumed_tail, max_length)
        self._more = bool(self._zlib.unconsumed_tail) or len(out) == max_length
        return out


def _decoder(suffix: str) -> _Decoder:
    if suffix == ".gz":
        return _GzipMember()
    if suffix == ".bz2":
        return bz2.BZ2Decompressor()
    # lzma's own file reader sets no limit: a header may ask for a 4 GiB dictionary.
    return lzma.LZMADecompressor(memlimit=_XZ_MEMORY)


class Unpacking:
    """A compressed file's bytes (``source``, compressed as ``suffix`` says), unpacked stream
    by stream as far as asked: a piece at a time (:meth:`unpack`), or into ``out``
    (:meth:`fill`). ``packed`` counts the compressed bytes read so far."""

    def __init__(self, suffix: str, source: BinaryIO) -> None:
        self.out = io.BytesIO()
        self.packed = 0
        self._suffix, self._source = suffix, source
        self._pending = b""  # compressed bytes read and not yet given to a decoder
        self._streams = 0
        self._decoder: _Decoder | None = None  # the stream being unpacked

    def fill(self, limit: int) -> None:
        """Unpack into ``out`` until more than ``limit`` bytes are out, or all are."""
        while self.out.tell() <= limit:
            piece = self.unpack(limit + 1 - self.out.tell())
            if not piece:
                return
            self.out.write(piece)

    def unpack(self, size: int) -> bytes:
        """The next at most ``size`` (> 0) unpacked bytes; b'' at the end of the last stream."""
        while True:
            decoder = self._decoder or self._next_stream()
            if decoder is None:
                return b""
            piece = b""
            if decoder.needs_input:
                piece = self._read()
                if not piece:
                    raise EOFError("compressed file ended before the end-of-stream marker")
            out = decoder.decompress(piece, min(size, _CHUNK))
            if decoder.eof:
                self._pending = decoder.unused_data
                self._decoder = None
            if out:
                return out

    def _read(self) -> bytes:
        # A bounded piece at a time: what a decompressor keeps of its input is a copy.
        piece, self._pending = self._pending, b""
        if not piece:
            piece = self._source.read(_IN_CHUNK)
            self.packed += len(piece)
        return piece

    def _next_stream(self) -> _Decoder | None:
        # Between streams: zero padding (gzip's, xz's), skipped at C speed, not a byte a call.
        while piece := self._read():
            found = _NOT_PADDING.search(piece)
            if found is not None:
                self._pending = piece[found.start() :]
                break
        else:
            return None
        self._streams += 1
        if self._streams > MAX_STREAMS:
            raise _TooManyStreamsError
        self._decoder = _decoder(self._suffix)
        return self._decoder


def text_check(path: Path, head: bytes, packed: bool) -> None:
    """Refuse a file whose name gives no format (``README``, ``NEWS.gz``), read as text for
    want of one, unless its start (``head``, the first :data:`SNIFF_BYTES` it holds, or
    ``packed`` unpacks to) is UTF-8 text.

    Raises:
        UnsupportedFileError: it is a man page's roff source, binary, or text in another
            encoding (a name that says nothing must not pass garbage off as text).
    """
    first = next((line.strip() for line in head.splitlines() if line.strip()), b"")
    if _ROFF.match(first):
        inner = PurePosixPath(path.name).stem
        problem = (
            "a manual page's roff source, which knowhub does not typeset: save the page as "
            f"text (man -l {path.name} > {inner}.txt), which knowhub reads by its sections "
            "and options"
        )
    elif b"\x00" in head:
        problem = f"{'decompresses to' if packed else 'holds'} binary data, not text"
    elif not _utf8(head):
        problem = (
            f"{'decompresses to' if packed else 'holds'} text that is not UTF-8, and its name "
            "gives no format: save it as UTF-8, or give it the extension of its format (.txt "
            "for text)"
        )
    else:
        return
    raise UnsupportedFileError(f"{escape_surrogates(str(path))}: {problem}", problem)


def _utf8(head: bytes) -> bool:
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head)  # a character cut at the end: text
    except UnicodeDecodeError:
        return False
    return True
