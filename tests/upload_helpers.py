"""Multipart bodies as browsers (and broken clients) send them, for the console's upload tests."""

from __future__ import annotations

from collections.abc import Sequence

BOUNDARY = "----knowhubtest"
FROM_PAGE = {"Sec-Fetch-Site": "same-origin"}  # what the console's own pages send
SCRIPT = {**FROM_PAGE, "Accept": "application/json"}  # the upload page's script: a job at once


def disposition(name: str, filename: str | None = None) -> bytes:
    """A part's ``Content-Disposition`` as a browser writes it: UTF-8, the name quoted."""
    value = f'form-data; name="{name}"'
    if filename is not None:
        value += f'; filename="{filename}"'
    return value.encode()


def part(header: bytes, data: bytes, boundary: str = BOUNDARY) -> bytes:
    """One part: its ``Content-Disposition`` header (raw bytes, as sent), then its data."""
    return f"--{boundary}\r\n".encode() + b"Content-Disposition: " + header + b"\r\n\r\n" + data


def multipart(parts: Sequence[tuple[bytes, bytes]], boundary: str = BOUNDARY) -> bytes:
    """A whole body of ``(content-disposition, data)`` parts."""
    body = b"".join(part(header, data, boundary) + b"\r\n" for header, data in parts)
    return body + f"--{boundary}--\r\n".encode()


def form(files: Sequence[tuple[str, bytes]], collection: str = "default") -> bytes:
    """An upload form: its collection, then ``(file name, bytes)`` files."""
    fields = [(disposition("collection"), collection.encode())]
    return multipart(fields + [(disposition("files", n), data) for n, data in files])


def content_type(boundary: str = BOUNDARY) -> dict[str, str]:
    return {"Content-Type": f"multipart/form-data; boundary={boundary}"}
