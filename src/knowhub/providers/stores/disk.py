"""Whether a failed write is the disk's fault (full, read-only, failing) rather than the
document's: then every write after it fails the same way, and a run must stop once,
saying so, instead of failing each of its files with the same error."""

from __future__ import annotations

import errno
import os
import sqlite3

__all__ = ["disk_stop", "disk_trouble"]

# SQLite's primary result codes (https://sqlite.org/rescode.html): the low byte of an
# extended code.
_SQLITE = {13: "is full", 8: "is read-only", 10: "failed a write (disk I/O error)"}
_ERRNO = {
    errno.ENOSPC: "is full",
    errno.EDQUOT: "is full (disk quota exceeded)",
    errno.EROFS: "is read-only",
    errno.EIO: "failed a write (disk I/O error)",
}
_PG_DISK_FULL = "53100"  # PostgreSQL's SQLSTATE disk_full


def disk_trouble(exc: BaseException | None, *, writing: bool = True) -> str | None:
    """What is wrong with the disk written to (``is full``, ``is read-only``, …), if that is
    what ``exc`` (or an error it was raised from) says; None for any other failure.

    Args:
        exc: the error.
        writing: whether the failed call was a write to the store: only then does an I/O
            error (SQLite's, or EIO) or a read-only database blame the disk written to (a
            source file read with EIO is that file's fault; no read fails with ENOSPC).
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if (found := _trouble(exc, writing)) is not None:
            return found
        exc = exc.__cause__ or exc.__context__
    return None


def _trouble(exc: BaseException, writing: bool) -> str | None:
    """:func:`disk_trouble` of ``exc`` alone."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(exc, sqlite3.Error) and isinstance(code, int) and writing:
        return _SQLITE.get(code & 0xFF)
    if isinstance(exc, OSError) and (writing or exc.errno != errno.EIO):
        return _ERRNO.get(exc.errno or 0)
    return "is full" if getattr(exc, "sqlstate", None) == _PG_DISK_FULL else None


def disk_stop(where: str, trouble: str, exc: BaseException) -> str:
    """Why a run stopped, and the fix: ``the data dir /srv/kb is full (…): free space …``."""
    if trouble.startswith("is full"):
        fix = "free space there, or move it to a larger disk"
    elif trouble == "is read-only":
        fix = f"make it writable by this user (uid {os.getuid()}), or mount it read-write"
    else:
        fix = "check the disk (its free space, the kernel log) and the store's files"
    return f"{where} {trouble} ({exc}): {fix}"
