"""reStructuredText section titles: underlined, or over- and underlined (docutils spec,
"Sections"). Plain text that underlines its titles the same way (and Setext, its
``=====``/``-----`` subset) is read by these rules too (:mod:`.plaintext`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from knowhub.models import Heading

__all__ = ["Adornment", "rst_headings", "title_at"]

Adornment = tuple[str, bool]
"""A title's style: its adornment character, and whether it has an overline too."""

# Any printable ASCII punctuation may adorn an RST section title (docutils spec,
# "Sections"); the run must be one repeated character.
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")
# docutils accepts an underline shorter than its title (with a warning) from 4 chars.
_SHORT_UNDERLINE_OK = 4


def rst_headings(text: str) -> tuple[Heading, ...]:
    """Find reStructuredText section titles (underlined, or over- and underlined).

    As in docutils, a title's level is the order in which its adornment style
    (character, with or without overline) first appears in the document.

    Args:
        text: reStructuredText.

    Returns:
        Headings in text order; ``char_start`` is the offset of the title's first line
        (the overline, when there is one).
    """
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    styles: list[Adornment] = []
    headings: list[Heading] = []
    index = 0
    while index < len(lines):
        found = title_at(lines, index)
        if found is None:
            index += 1
            continue
        style, title, used = found
        if style not in styles:
            styles.append(style)
        headings.append(Heading(styles.index(style) + 1, title, offsets[index]))
        index += used
    return tuple(headings)


def title_at(lines: Sequence[str], index: int) -> tuple[Adornment, str, int] | None:
    """The section title starting at ``lines[index]``: (style, title, lines used)."""
    if index > 0 and lines[index - 1].strip():
        return None  # a title must follow a blank line (or start the document)
    window = [*lines[index : index + 3], "", ""]
    first, second, third = window[0], window[1], window[2]
    over = _ADORNMENT.fullmatch(first)
    if (
        over
        and second.strip()
        and third.rstrip() == first.rstrip()
        and len(first.rstrip()) >= len(second.strip())
    ):
        return (over[1], True), second.strip(), 3
    under = _ADORNMENT.fullmatch(second)
    if over or not under or not first.strip() or first[0] in " \t":
        return None
    title = first.rstrip()
    length = len(second.rstrip())
    if length >= len(title) or length >= _SHORT_UNDERLINE_OK:
        return (under[1], False), title, 2
    return None
