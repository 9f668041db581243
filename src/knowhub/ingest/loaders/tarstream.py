"""A compressed tar's bytes, unpacked by knowhub's own bounded reader
(:class:`~knowhub.ingest.loaders.compressed.Unpacking`) rather than :mod:`tarfile`'s: every
piece unpacked is checked (``check``) before tarfile sees it, so a decompression bomb is refused
after at most a megabyte more than its limits, and an xz stream may ask for at most 256 MiB.

A header tarfile reads whole before it returns (a GNU long name or link, a pax record) is
refused by its declared size before it is read (:class:`BoundedTarInfo`): within a large
archive's ratio, a 200 MB name would otherwise be 200 MB of memory.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, cast

from knowhub.ingest.loaders.compressed import Unpacking

__all__ = ["MAX_HEADER_BYTES", "BoundedTarInfo", "HeaderTooLargeError", "TarStream", "compression"]

MAX_HEADER_BYTES = 1 << 20
"""The most one extended header (a GNU long name, a pax record) may declare: a path is at most
4 kB on Linux, and pax records of a few kB hold every attribute tar writes."""

_MAGIC = {b"\x1f\x8b": ".gz", b"BZh": ".bz2", b"\xfd7zXZ\x00": ".xz"}
_SKIP = 1 << 20  # seeking forward unpacks and drops this much at a time


def compression(file: BinaryIO) -> str:
    """The compression ``file`` starts with, as its suffix (``.gz``), or '' (a plain tar);
    by content, as tarfile's "r:*" tells it (a .tgz may be a plain tar)."""
    start = file.tell()
    head = file.read(6)
    file.seek(start)
    return next((suffix for magic, suffix in _MAGIC.items() if head.startswith(magic)), "")


class HeaderTooLargeError(Exception):
    """An extended header declares more than :data:`MAX_HEADER_BYTES`."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose extended headers are bounded: one declaring over
    :data:`MAX_HEADER_BYTES` is refused before tarfile reads it (it reads one whole, whatever
    it declares), and what one reads in all (the headers it chains to, a GNU sparse map read
    a block at a time until the count it declares) may not pass twice that."""

    def _proc_gnulong(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        with _bounded(self, tarfile):
            return super()._proc_gnulong(tarfile)  # type: ignore[misc,no-any-return]

    def _proc_pax(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        with _bounded(self, tarfile):
            return super()._proc_pax(tarfile)  # type: ignore[misc,no-any-return]

    def _proc_sparse(self, tarfile: tarfile.TarFile) -> tarfile.TarInfo:
        with _bounded(self, tarfile):
            return super()._proc_sparse(tarfile)  # type: ignore[misc,no-any-return]


@contextmanager
def _bounded(info: tarfile.TarInfo, archive: tarfile.TarFile) -> Iterator[None]:
    """``archive`` read through a :class:`_Budget` while ``info``'s extended header is."""
    if info.type != tarfile.GNUTYPE_SPARSE and info.size > MAX_HEADER_BYTES:
        raise HeaderTooLargeError(info.size)
    file = archive.fileobj
    archive.fileobj = cast("BinaryIO", _Budget(cast("BinaryIO", file), 2 * MAX_HEADER_BYTES))
    try:
        yield
    finally:
        archive.fileobj = file


class _Budget:
    """``file``, refusing a read past ``budget`` bytes in all before it is made."""

    def __init__(self, file: BinaryIO, budget: int) -> None:
        self._file, self._left, self._budget = file, budget, budget

    def read(self, size: int) -> bytes:
        if size > self._left:
            raise HeaderTooLargeError(self._budget - self._left + size)
        data = self._file.read(size)
        self._left -= len(data)
        return data

    def tell(self) -> int:
        return self._file.tell()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)


class TarStream(io.RawIOBase):
    """The unpacked bytes of the compressed ``file`` (``suffix`` says how), as the seekable
    file tarfile's "r:" mode reads: a seek forward unpacks and drops, one back unpacks again
    from the start (as :class:`gzip.GzipFile` does). After each piece, ``check(unpacked,
    packed)`` is given the offset reached and the compressed bytes read to reach it, and
    raises to stop."""

    def __init__(self, file: BinaryIO, suffix: str, check: Callable[[int, int], None]) -> None:
        super().__init__()
        self._file, self._suffix, self._check = file, suffix, check
        self._start = file.tell()
        self._restart()

    def _restart(self) -> None:
        self._file.seek(self._start)
        self._unpacking = Unpacking(self._suffix, self._file)
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence not in (io.SEEK_SET, io.SEEK_CUR):
            raise io.UnsupportedOperation("a compressed tar is not seeked from its end")
        target = offset + (self._position if whence == io.SEEK_CUR else 0)
        if target < self._position:
            self._restart()
        while self._position < target and self.read(min(target - self._position, _SKIP)):
            pass
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        """``size`` bytes (all that are left when negative), fewer only at the end: tarfile
        takes a short read of a header for the end of the archive."""
        wanted = (1 << 62) if size is None or size < 0 else size
        pieces: list[bytes] = []
        got = 0
        while got < wanted:
            piece = self._unpacking.unpack(wanted - got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
            self._check(self._position + got, self._unpacking.packed)
        self._position += got
        return b"".join(pieces)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
