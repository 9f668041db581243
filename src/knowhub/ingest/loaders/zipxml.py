"""Zipped XML packages (OpenDocument, EPUB): members read within the limits, XML parsed
with the standard library at a bounded depth.

The zip is checked as Office files are (:func:`~knowhub.ingest.loaders.common.check_office_file`:
declared sizes, ratio) before any member is read, and a member is never read past the size
its entry declares. The XML parser is expat (``xml.etree``), which resolves no external
entity and, from expat 2.4, refuses entity expansion that amplifies its input (a "billion
laughs"); nesting is refused past libxml2's default 256 levels, as the Office loaders'
parser does, so the walks over the tree may recurse.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import cast
from xml.etree import ElementTree

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.common import Limits, check_office_file, loader_error

__all__ = ["XML_DEPTH", "Package", "local_name"]

XML_DEPTH = 256
_FEED_BYTES = 1 << 20  # the parse looks at the file's deadline between pieces this size


class Package:
    """A zip package whose members are XML (and XHTML) parts.

    Args:
        path: the file, for messages.
        data: its bytes.
        extension: what it should be (``.odt``, ``.epub``), for messages.
        limits: ``max_bytes`` bounds the members together (checked from the zip's
            directory, before any is read); the ``deadline`` is checked as XML is parsed.

    Raises:
        LoaderError: the file is no zip, is encrypted as Office encrypts, or unpacks to
            more than the limit or like a zip bomb.
    """

    def __init__(self, path: Path, data: bytes, extension: str, limits: Limits) -> None:
        check_office_file(path, data, extension, limits)
        self.path = path
        self.extension = extension
        self.limits = limits
        self.archive = zipfile.ZipFile(io.BytesIO(data))
        self.names = frozenset(self.archive.namelist())

    def read(self, name: str) -> bytes | None:
        """The member's bytes; None when there is no such member.

        Raises:
            LoaderError: the member is corrupt (its checksum or compressed data).
        """
        if name not in self.names:
            return None
        try:
            return self.archive.read(name)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError) as exc:
            raise self.invalid(f"its part {name} cannot be unpacked ({exc})") from exc

    def xml(self, name: str) -> ElementTree.Element | None:
        """The member parsed as XML; None when there is no such member.

        Raises:
            LoaderError: the member is not well-formed XML, nests deeper than
                :data:`XML_DEPTH`, or expands entities past what expat allows.
        """
        data = self.read(name)
        return None if data is None else self.parse(name, data)

    def parse(self, name: str, data: bytes) -> ElementTree.Element:
        """``data``, the member ``name``, parsed as XML (see :meth:`xml`)."""
        parser: ElementTree.XMLPullParser[ElementTree.Element] = ElementTree.XMLPullParser(
            events=("start", "end")
        )
        depth = 0
        root: ElementTree.Element | None = None
        try:
            for start in range(0, len(data), _FEED_BYTES):
                parser.feed(data[start : start + _FEED_BYTES])
                # Only start and end events are asked for: (name, element) pairs.
                events = cast("Iterator[tuple[str, object]]", parser.read_events())
                for event, element in events:
                    if not isinstance(element, ElementTree.Element):
                        continue
                    depth += 1 if event == "start" else -1
                    root = element if root is None else root
                    if depth > XML_DEPTH:
                        raise self.too_deep(name)
                self.limits.deadline.check(self.path, f"while parsing {name}")
            parser.close()
        except ElementTree.ParseError as exc:
            raise self.bad_xml(name, exc) from exc
        except LookupError as exc:  # its declaration names an encoding there is none of
            raise self.invalid(f"its part {name} declares an unknown encoding ({exc})") from exc
        if root is None:
            raise self.invalid(f"its part {name} holds no XML")
        return root

    def too_deep(self, name: str) -> LoaderError:
        return loader_error(
            self.path,
            f"nests XML elements deeper than {XML_DEPTH} levels in {name}, past what its "
            "reader goes: no document nests so deep; re-save it from its application",
        )

    def bad_xml(self, name: str, exc: Exception) -> LoaderError:
        if "amplification" in str(exc):
            return loader_error(
                self.path,
                f"its part {name} declares XML entities that expand far past its size (an "
                "XML bomb): no document needs them; re-save it from its application",
            )
        return self.invalid(f"its part {name} is not well-formed XML ({exc})")

    def encrypted(self) -> LoaderError:
        """The error for a package whose content is encrypted (password, DRM)."""
        return loader_error(
            self.path,
            "is encrypted/password-protected: open it in its application, remove the "
            f"password and save it again as {self.extension}",
        )

    def invalid(self, problem: str) -> LoaderError:
        """The error for a package that opens but is not what its extension says."""
        return loader_error(
            self.path,
            f"is not a valid {self.extension} ({problem}): re-save it from its application, "
            "or give it the right extension",
        )

    def close(self) -> None:
        self.archive.close()


def local_name(tag: str) -> str:
    """An element's name without its namespace: ``{urn:…:text:1.0}p`` is ``p``."""
    return tag.rpartition("}")[2]
