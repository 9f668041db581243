"""Archives (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``), read member
by member in memory: nothing is ever extracted to disk, so a member named ``../../etc/x``
or ``/etc/x`` is only a name (made safe: ``etc/x``), and links and devices are passed over.

What an archive may cost is bounded before and while it is read, as Office files are
(:func:`~knowhub.ingest.loaders.common.check_office_file`): the member count and the
sizes its directory (zip) or headers (tar) declare, then the bytes actually unpacked
(:mod:`zipfile` never unpacks a member past its declared size; a tar member's data is its
declared size), and the ratio of unpacked to packed bytes (a compressed tar's whole
stream, checked piece by piece as :mod:`.tarstream` unpacks it, headers too). A zip's
member count is read from its end record before :mod:`zipfile` parses the directory, so a
50,000-member archive is refused in moments, whatever it holds.
"""

from __future__ import annotations

import functools
import io
import stat
import struct
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.common import loader_error
from knowhub.ingest.loaders.compressed import unpack_errors
from knowhub.ingest.loaders.tarstream import (
    MAX_HEADER_BYTES,
    BoundedTarInfo,
    HeaderTooLargeError,
    TarStream,
    compression,
)

__all__ = [
    "ARCHIVE_EXTENSIONS",
    "ArchiveLimits",
    "Entry",
    "archive_entries",
    "is_archive",
    "safe_member_name",
]

_TAR_SUFFIXES = (".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")
ARCHIVE_EXTENSIONS: tuple[str, ...] = (".zip", *_TAR_SUFFIXES)
"""Lower-case name endings of the archives knowhub reads, each member a document."""

_RATIO_FLOOR = 1 << 20  # what may unpack as tightly as it likes (a small file of blanks)
# A tar stream's ratio is what it unpacked so far over what it read so far, which runs up to a
# piece read (64 kB) ahead: measured past 64 MB, that error is under 1:2.
_TAR_RATIO_FLOOR = 64 << 20
_HEADER_ROOM = 4096  # a member's headers and padding, beyond the bytes it declares
_EOCD = b"PK\x05\x06"
_EOCD64_LOCATOR = b"PK\x06\x07"


@dataclass(frozen=True)
class ArchiveLimits:
    """What one archive may cost: ``ingest.max_file_bytes`` per member, and the
    ``ingest.archive_*`` settings."""

    max_member_bytes: int = 200_000_000
    max_members: int = 10_000
    max_bytes: int = 2_000_000_000
    max_ratio: int = 200
    max_depth: int = 2


@dataclass(frozen=True)
class Entry:
    """A member: its safe posix ``name`` and ``data``, or why it is passed over
    (``problem``; ``failed``: the member's fault, reported as failed, else skipped)."""

    name: str
    data: bytes = b""
    problem: str = ""
    failed: bool = False
    expand: bool = True  # read as an archive or mailbox itself when its name says one


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_EXTENSIONS)


def safe_member_name(name: str) -> str:
    """``name`` as a relative posix path with no ``..``, ``.`` or empty part (and no
    drive or leading slash): what a member is called in its document's source."""
    parts = name.replace("\\", "/").split("/")
    kept = [p for p in parts if p not in ("", ".", "..")]
    if kept and len(kept[0]) == 2 and kept[0][1] == ":":  # a Windows drive (C:)
        kept = kept[1:]
    return "/".join(kept)


def archive_entries(path: Path, file: BinaryIO, limits: ArchiveLimits) -> Iterator[Entry]:
    """The members of the archive ``file`` (named ``path``, whose name says the kind),
    one at a time: only one member's bytes are held at once.

    Raises:
        LoaderError: the archive is corrupt, or over a limit that refuses it whole (its
            member count, its total size, a tar stream's ratio); the message names the
            setting to raise. A member over its own limit comes as a failed entry.
    """
    if path.name.lower().endswith(".zip"):
        return _zip_entries(path, file, limits)
    return _tar_entries(path, file, limits)


def _refused(path: Path, problem: str, setting: str) -> LoaderError:
    return loader_error(path, f"{problem}; refused whole: raise ingest.{setting} if it is genuine")


def _too_many(path: Path, count: int, limits: ArchiveLimits) -> LoaderError:
    return _refused(
        path,
        f"holds {count:,} members, over {limits.max_members:,}",
        "archive_max_members",
    )


def _too_large(path: Path, total: int, limits: ArchiveLimits) -> LoaderError:
    return _refused(
        path,
        f"unpacks to more than {limits.max_bytes:,} bytes (at least {total:,})",
        "archive_max_bytes",
    )


# -- zip --------------------------------------------------------------------------------


def _zip_entries(path: Path, file: BinaryIO, limits: ArchiveLimits) -> Iterator[Entry]:
    declared = _zip_declared_count(file)
    if declared is not None and declared > limits.max_members:
        raise _too_many(path, declared, limits)
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise loader_error(path, f"is not a valid zip archive ({exc}): download it again") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_members:
            raise _too_many(path, len(infos), limits)
        total = sum(info.file_size for info in infos)
        if total > limits.max_bytes:
            raise _too_large(path, total, limits)
        unpacked = 0
        for info in infos:
            entry = _zip_entry(archive, info, limits)
            unpacked += len(entry.data)
            if unpacked > limits.max_bytes:  # declared sizes are checked; counted, too
                raise _too_large(path, unpacked, limits)
            if entry.name:
                yield entry


def _zip_declared_count(file: BinaryIO) -> int | None:
    """The member count a zip's end record declares (its zip64 one's when it has one),
    read before :mod:`zipfile` builds an object per member; None when not found (then
    :mod:`zipfile` says what is wrong)."""
    size = file.seek(0, io.SEEK_END)
    start = max(0, size - (1 << 16) - 22)  # the record, then a comment of up to 64 kB
    file.seek(start)
    tail = file.read()
    at = tail.rfind(_EOCD)
    if at < 0 or at + 22 > len(tail):
        return None
    count = int(struct.unpack_from("<H", tail, at + 10)[0])
    locator = tail.rfind(_EOCD64_LOCATOR, 0, at)
    if count == 0xFFFF and locator >= 0 and locator + 20 <= len(tail):
        offset = int(struct.unpack_from("<Q", tail, locator + 8)[0])
        file.seek(offset)
        record = file.read(56)
        if len(record) == 56:
            count = int(struct.unpack_from("<Q", record, 32)[0])
    file.seek(0)
    return count


def _zip_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: ArchiveLimits) -> Entry:
    name = safe_member_name(info.filename)
    mode = info.external_attr >> 16
    if info.is_dir() or not name:
        return Entry("")
    if mode and stat.S_ISLNK(mode):
        return Entry(name, problem="a symbolic link, not a file: links are not followed")
    if mode and not stat.S_ISREG(mode) and stat.S_IFMT(mode):
        return Entry(name, problem="not a regular file: only files are read")
    if problem := _member_limits(info.file_size, info.compress_size, limits):
        return Entry(name, problem=problem, failed=True)
    try:
        with archive.open(info) as member:
            data = member.read(limits.max_member_bytes + 1)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError) as exc:
        # RuntimeError: encrypted; NotImplementedError: a compression zipfile lacks.
        return Entry(name, problem=f"cannot be unpacked ({exc})", failed=True)
    return Entry(name, data)


def _member_limits(size: int, packed: int, limits: ArchiveLimits) -> str:
    """Why a member of ``size`` bytes (``packed`` as stored) is refused, or ''."""
    if size > limits.max_member_bytes:
        return (
            f"too large: unpacks to {size:,} bytes > limit {limits.max_member_bytes:,}; "
            "raise ingest.max_file_bytes"
        )
    if size > _RATIO_FLOOR and size > limits.max_ratio * max(packed, 1):
        return (
            f"looks like a decompression bomb: unpacks {size:,} bytes from {packed:,} (over "
            f"{limits.max_ratio}:1); raise ingest.archive_max_ratio if it is genuine"
        )
    return ""


# -- tar --------------------------------------------------------------------------------


def _tar_entries(path: Path, file: BinaryIO, limits: ArchiveLimits) -> Iterator[Entry]:
    """Two passes: the headers first (every limit checked before a member is read, each
    before the data it declares is unpacked), then the members in order. A compressed tar is
    unpacked by a bounded reader (:mod:`.tarstream`) that checks the ratio and the total as
    it goes, so no header is read past them."""
    suffix = compression(file)
    stream: BinaryIO = file  # a plain tar is read as it is: its ratio is 1:1
    unpacking: AbstractContextManager[None] = nullcontext()
    if suffix:
        check = functools.partial(_check_stream, path, limits)
        stream = cast("BinaryIO", TarStream(file, suffix, check))
        unpacking = unpack_errors(path, suffix)
    with (
        unpacking,
        _header_errors(path),
        tarfile.open(fileobj=stream, mode="r:", tarinfo=BoundedTarInfo) as archive,
    ):
        infos = _tar_listing(path, archive, limits)
        for info in infos:
            entry = _tar_entry(path, archive, info, limits)
            if entry.name:
                yield entry


@contextmanager
def _header_errors(path: Path) -> Iterator[None]:
    """What reading a tar's headers raises, said as a :class:`LoaderError` (tarfile reads
    the first at open)."""
    try:
        yield
    except HeaderTooLargeError as exc:
        raise loader_error(
            path,
            f"holds a header of {exc.size:,} bytes (a file name or attributes), over "
            f"{MAX_HEADER_BYTES:,}: no genuine name is that long; refused whole",
        ) from exc
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        # ValueError: tarfile's parse of a sparse map or pax record cut short.
        raise _invalid(path, exc) from exc


def _invalid(path: Path, exc: BaseException) -> LoaderError:
    return loader_error(path, f"is not a valid tar archive ({exc}): download it again")


def _tar_listing(
    path: Path, archive: tarfile.TarFile, limits: ArchiveLimits
) -> list[tarfile.TarInfo]:
    infos: list[tarfile.TarInfo] = []
    total = 0
    while (info := archive.next()) is not None:
        infos.append(info)
        if len(infos) > limits.max_members:
            raise _too_many(path, len(infos), limits)
        total += info.size if info.isfile() else 0
        if total > limits.max_bytes:
            raise _too_large(path, total, limits)
    return infos


def _check_stream(path: Path, limits: ArchiveLimits, unpacked: int, packed: int) -> None:
    """Refuse a compressed tar once its stream unpacks past the ratio or past the total its
    members may hold (with room for their headers)."""
    _check_ratio(path, unpacked, packed, limits)
    if unpacked > limits.max_bytes + limits.max_members * _HEADER_ROOM:
        raise _too_large(path, unpacked, limits)


def _check_ratio(path: Path, unpacked: int, packed: int, limits: ArchiveLimits) -> None:
    if unpacked > _TAR_RATIO_FLOOR and unpacked > limits.max_ratio * max(packed, 1):
        raise _refused(
            path,
            f"looks like a decompression bomb: unpacks {unpacked:,} bytes from {packed:,} "
            f"(over {limits.max_ratio}:1)",
            "archive_max_ratio",
        )


def _tar_entry(
    path: Path, archive: tarfile.TarFile, info: tarfile.TarInfo, limits: ArchiveLimits
) -> Entry:
    name = safe_member_name(info.name)
    if info.isdir() or not name:
        return Entry("")
    if info.issym() or info.islnk():
        return Entry(name, problem="a link, not a file: links are not followed")
    if not info.isfile():
        return Entry(name, problem="a device, FIFO or other special file: only files are read")
    if problem := _member_limits(info.size, info.size, limits):
        return Entry(name, problem=problem, failed=True)
    member = archive.extractfile(info)  # what it raises: _header_errors
    data = member.read(info.size) if member is not None else b""
    return Entry(name, data)
