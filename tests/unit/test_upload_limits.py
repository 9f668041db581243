"""What an upload's body may not do: be malformed (400), outgrow its limits (413, naming the
limit that refused it), or fill the disk (507, naming the data dir; nothing half-written kept)."""

from __future__ import annotations

import asyncio
import errno
import io
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import pytest

from knowhub.errors import KnowhubError, QueryError
from knowhub.interfaces.http.console.uploads import (
    Upload,
    UploadLimits,
    open_part,
    receive,
)
from knowhub.interfaces.http.errors import (
    InsufficientStorageError,
    PayloadTooLargeError,
    error_status,
)
from tests.upload_helpers import BOUNDARY, disposition, form, multipart

LIMITS = UploadLimits(file_bytes=5_000, body_bytes=1_000_000, extensions=[".md"])


async def _chunks(body: bytes, size: int = 1000) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _receive(
    folder: Path,
    body: bytes,
    limits: UploadLimits = LIMITS,
    boundary: str = BOUNDARY,
    opener: object = open_part,
) -> Upload:
    sent = asyncio.run(
        receive(
            f"multipart/form-data; boundary={boundary}",
            _chunks(body),
            lambda fields: folder,
            limits,
            opener,  # type: ignore[arg-type]
        )
    )
    sent.release()  # no job record to wait for here
    return sent


@pytest.mark.parametrize(
    ("body", "boundary"),
    [
        (b"garbage", BOUNDARY),
        (f"--{BOUNDARY}\r\ngarbage\r\n".encode(), BOUNDARY),
        (
            multipart(
                [(b'form-data; name="files"; filename="a.md"\r\nX-Pad: ' + b"p" * 10_000, b"x")]
            ),
            BOUNDARY,
        ),
        (multipart([(disposition("files", "a.md") + b"\r\nX: y" * 20, b"x")]), BOUNDARY),
        (form([("a.md", b"# A\n")]), ""),
        (form([("a.md", b"# A\n")]), "b" * 300),
        (form([("a.md", b"# A\n")]), "bad\x7fboundary"),
        (form([("a.md", b"# A\n" * 100)])[:300], BOUNDARY),  # cut short: no closing boundary
    ],
)
def test_a_malformed_body_is_refused_as_bad_input(
    tmp_path: Path, body: bytes, boundary: str
) -> None:
    with pytest.raises(QueryError, match="multipart/form-data") as refused:
        _receive(tmp_path, body, boundary=boundary)
    assert error_status(refused.value) == 400
    assert not list(tmp_path.iterdir())


def test_a_body_over_the_upload_limit_names_that_limit(tmp_path: Path) -> None:
    files = [(f"{n}.md", b"x" * 4_000) for n in range(5)]  # each under the per-file limit
    limits = UploadLimits(file_bytes=5_000, body_bytes=10_000, extensions=[".md"])
    with pytest.raises(PayloadTooLargeError) as refused:
        _receive(tmp_path, form(files), limits)
    message = str(refused.value)
    assert "server.max_upload_body_bytes" in message and "10,000" in message
    assert "server.max_upload_bytes" not in message.replace("max_upload_body", "")
    assert error_status(refused.value) == 413
    assert not list(tmp_path.iterdir())  # the files received before it are not kept


def test_a_file_over_its_limit_that_overruns_the_body_names_the_file_limit(tmp_path: Path) -> None:
    limits = UploadLimits(file_bytes=5_000, body_bytes=10_000, extensions=[".md"])
    with pytest.raises(PayloadTooLargeError) as refused:
        _receive(tmp_path, form([("big.md", b"x" * 50_000)]), limits)
    message = str(refused.value)
    assert "big.md" in message and "server.max_upload_bytes" in message and "5,000" in message
    assert "max_upload_body_bytes" not in message


class _FullDisk(io.FileIO):
    """A file on a disk with ``room`` bytes left: a write past that fails with ENOSPC."""

    room = 3_000

    def write(self, data: object) -> int:
        chunk = bytes(data)  # type: ignore[call-overload]
        left = self.room - self.tell()
        if len(chunk) > left:
            super().write(chunk[: max(left, 0)])
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(chunk)


def _full_disk(folder: Path) -> tuple[Path, IO[bytes]]:
    path, out = open_part(folder)
    out.close()
    return path, _FullDisk(path, "wb")


def test_a_full_disk_is_507_naming_the_data_dir_and_keeps_nothing(tmp_path: Path) -> None:
    body = form([("small.md", b"# S\n"), ("报告.md", b"y" * 4_500)])
    with pytest.raises(InsufficientStorageError) as refused:
        _receive(tmp_path, body, opener=_full_disk)
    message = str(refused.value)
    assert "报告.md" in message and "server.data_dir" in message
    assert str(tmp_path) not in message  # no server path shown to the uploader
    assert error_status(refused.value) == 507
    assert not list(tmp_path.iterdir())  # neither the partial file nor the one before it


@pytest.mark.parametrize("error", [errno.EROFS, errno.EACCES, errno.EPERM])
def test_a_data_dir_that_is_not_writable_is_503_naming_it_and_keeps_nothing(
    tmp_path: Path, error: int
) -> None:
    def unwritable(folder: Path) -> tuple[Path, IO[bytes]]:
        raise OSError(error, os.strerror(error), str(folder / ".upload-x.part"))

    with pytest.raises(KnowhubError) as refused:
        _receive(tmp_path, form([("a.md", b"# A\n")]), opener=unwritable)
    message = str(refused.value)
    assert error_status(refused.value) == 503
    assert "server.data_dir" in message and "not writable" in message and "a.md" in message
    assert str(tmp_path) not in message  # the path is for the server's log
    assert not list(tmp_path.iterdir())
