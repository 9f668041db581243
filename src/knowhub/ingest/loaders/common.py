"""Helpers shared by the format loaders: error messages, titles, Office containers."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

from knowhub.errors import LoaderError
from knowhub.models import LoadedDocument

__all__ = ["Loader", "check_office_file", "loader_error", "not_office_file", "pick_title"]

Loader = Callable[[Path, bytes], LoadedDocument]
"""A format loader: the file's path (for messages and titles) and its bytes."""

# Encrypted OOXML files are not zips: Office wraps them in an OLE compound file,
# the same container as the legacy binary .doc/.ppt/.xls formats.
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def loader_error(path: Path, problem: str) -> LoaderError:
    """Build a :class:`LoaderError` whose message starts with the file path.

    Args:
        path: the file that failed.
        problem: what is wrong and how to fix it.

    Returns:
        The error, for the caller to raise (and chain).
    """
    return LoaderError(f"{path}: {problem}")


def pick_title(path: Path, *candidates: str | None) -> str:
    """Return the first non-blank candidate, stripped, else the file stem.

    Args:
        path: the file, whose stem is the last resort.
        *candidates: possible titles, best first.

    Returns:
        The title to show for the document.
    """
    for candidate in candidates:
        if candidate and candidate.strip():
            return " ".join(candidate.split())
    return path.stem


def check_office_file(path: Path, data: bytes, extension: str) -> None:
    """Reject encrypted or non-zip files before an Office library sees them.

    The libraries' own errors for these cases are cryptic (``KeyError``,
    ``BadZipFile``), so the two common causes get a clear message here.

    Args:
        path: the file, for the message.
        data: its bytes.
        extension: the expected extension (``.docx`` …), for the message.

    Raises:
        LoaderError: the file is encrypted (or a legacy binary Office file) or not a zip.
    """
    if data.startswith(_OLE_SIGNATURE):
        raise loader_error(
            path,
            "is encrypted/password-protected (or an old binary Office file): remove the "
            f"password, or open it in Office and save it as {extension}",
        )
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise not_office_file(path, extension)


def not_office_file(path: Path, extension: str) -> LoaderError:
    """The error for an Office file that cannot be opened.

    Args:
        path: the file, for the message.
        extension: the expected extension (``.docx`` …).

    Returns:
        The error, for the caller to raise (and chain).
    """
    return loader_error(
        path,
        f"is not a valid {extension} (corrupt or not an Office file): re-save it from "
        "its application or give it the right extension",
    )
