"""The lines of a plain-text document, as layout rules read them: addressed by where they
start, read on demand. No list of lines is built: for a large file of short lines, one
would take several times the text's own memory."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property

__all__ = ["TAB_SIZE", "TextLines"]

TAB_SIZE = 8
"""Tab stops every 8 columns, as terminals and ``col`` (which puts tabs in ``man | col -b``
output) have them."""

_NON_SPACE = re.compile(r"\S")


class TextLines:
    """``text`` seen as lines; a line is named by its start offset, None past either end
    (reading None gives an empty line, so rules may look at neighbours freely)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def end(self, start: int) -> int:
        """Where the line starting at ``start`` ends (its newline, or the text's end)."""
        newline = self.text.find("\n", start)
        return len(self.text) if newline < 0 else newline

    def line(self, start: int | None) -> str:
        return "" if start is None else self.text[start : self.end(start)]

    def next(self, start: int | None) -> int | None:
        """The start of the line after, None at the last line."""
        if start is None:
            return None
        end = self.end(start)
        return end + 1 if end < len(self.text) else None

    def previous(self, start: int | None) -> int | None:
        """The start of the line before, None at the first line."""
        if not start:
            return None
        return self.text.rfind("\n", 0, start - 1) + 1

    def start_of(self, offset: int) -> int:
        """The start of the line holding ``offset``."""
        return self.text.rfind("\n", 0, offset) + 1

    def blank(self, start: int | None) -> bool:
        """Whether the line is blank (or past either end)."""
        return start is None or _NON_SPACE.search(self.text, start, self.end(start)) is None

    def indent(self, start: int | None) -> int:
        """The column the line's text starts at, tabs expanded; 0 for a blank line."""
        line = self.line(start)
        if not line.strip():
            return 0
        if "\t" in line:
            line = line.expandtabs(TAB_SIZE)
        return len(line) - len(line.lstrip())

    def starts(self, first: int = 0) -> Iterator[int]:
        """The starts of the lines from the one starting at ``first`` on."""
        start: int | None = first
        while start is not None:
            yield start
            start = self.next(start)

    @cached_property
    def first_text(self) -> int | None:
        """The start of the first non-blank line, None when there is none."""
        found = _NON_SPACE.search(self.text)
        return None if found is None else self.start_of(found.start())
