"""Paths of documents that live inside a file: an archive's members, a message's attachments.

A member is known by a path that names its file, ``!/``, then its name inside:
``/docs/bundle.zip!/guide/intro.md`` (nested: ``/docs/outer.tar!/inner.zip!/a.md``). No such
path exists on disk, so wherever a document's file is looked at (is it gone, has it changed,
may its failure be forgotten), a member's *container* is: the real file that holds it.
"""

from __future__ import annotations

import os

__all__ = ["MEMBER_SEPARATOR", "container_path", "is_member_path"]

MEMBER_SEPARATOR = "!/"


def container_path(path: str) -> str:
    """The file on disk that holds the document at ``path``: the outermost regular file
    ``path`` names before a ``!/``, else ``path`` itself (a folder may be named ``a!``: only a
    file before the ``!/`` makes a member)."""
    at = path.find(MEMBER_SEPARATOR)
    while at >= 0:
        if os.path.isfile(path[:at]):  # noqa: PTH113 - a str in, a str out
            return path[:at]
        at = path.find(MEMBER_SEPARATOR, at + 1)
    return path


def is_member_path(path: str) -> bool:
    return container_path(path) != path
