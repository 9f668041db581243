"""Open a file for ingest without blocking, and read it within the size limit.

A path found by the folder walk may be something else by the time it is read: a
FIFO (``mkfifo``) blocks ``open()`` and ``read()`` until a writer comes, forever if
none does. So the file is opened with ``O_NONBLOCK``, and its descriptor (not the
path, which may change again) is checked to be a regular file before any read.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.common import file_too_large, loader_error

__all__ = ["RegularFile", "open_regular"]

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


@dataclass(frozen=True)
class RegularFile:
    """An open regular file: its descriptor and the ``fstat`` taken right after opening."""

    path: Path
    fd: int
    stat: os.stat_result

    def read(self, max_bytes: int) -> bytes:
        """The whole file, in one buffer the size of the file.

        Raises:
            LoaderError: the file is, or grows to, more than ``max_bytes``.
        """
        if self.stat.st_size > max_bytes:
            raise file_too_large(self.path, self.stat.st_size, max_bytes)
        # closefd=False: the descriptor belongs to open_regular, which closes it.
        with io.FileIO(self.fd, closefd=False) as raw, io.BufferedReader(raw) as reader:
            # One read of the size fstat gave (plus one byte, to notice growth): a single
            # buffer, where read_bytes() of a growing file may copy it several times.
            data = reader.read(self.stat.st_size + 1)
            if len(data) > self.stat.st_size:  # it grew since fstat: read on, still bounded
                data += reader.read(max_bytes + 1 - len(data))
        if len(data) > max_bytes:
            raise file_too_large(self.path, len(data), max_bytes, grew=True)
        return data


@contextmanager
def open_regular(path: Path, confine: Path | None = None) -> Iterator[RegularFile]:
    """Open ``path`` for reading without ever blocking, and close it afterwards.

    With ``confine`` (a served folder), the file opened must lie inside it: checked on the
    open descriptor, since the path may have been swapped for a symlink leading out since
    discovery looked at it.

    Raises:
        LoaderError: ``path`` is not a regular file (a FIFO, socket, device or folder);
            the message names what it is. Or it leads outside ``confine``.
        OSError: it cannot be opened (missing, no permission …).
    """
    try:
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # what open() says for a socket file
            raise _not_regular(path, "a socket") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kinds = (name for test, name in _KINDS if test(info.st_mode))
            raise _not_regular(path, next(kinds, "an unknown kind of file"))
        if confine is not None:
            _check_inside(path, fd, confine)
        yield RegularFile(path, fd, info)
    finally:
        os.close(fd)


def _not_regular(path: Path, kind: str) -> LoaderError:
    return loader_error(
        path, f"is {kind}, not a regular file: knowhub reads only regular files; leave it out"
    )


def _check_inside(path: Path, fd: int, confine: Path) -> None:
    # Linux names the file an open descriptor refers to; elsewhere the path is resolved
    # again, which leaves the swap window discovery had, but no wider.
    proc = Path(f"/proc/self/fd/{fd}")
    opened = os.path.realpath(proc if proc.is_symlink() else path)
    fence = os.path.realpath(confine)
    if not Path(opened).is_relative_to(fence):
        raise loader_error(
            path,
            f"leads outside {fence} (through a symlink), so it is not served: "
            "move the file inside or remove the link",
        )
