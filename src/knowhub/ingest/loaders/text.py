"""Loaders for plain-text formats: Markdown, MDX, reStructuredText and ``.txt``.

The text is kept exactly as decoded (newlines normalized), so chunk offsets and
line numbers point into the file as the user sees it.
"""

from __future__ import annotations

import re
from pathlib import Path

from knowhub.ingest.loaders.common import Limits, first_line_title, pick_title
from knowhub.ingest.loaders.encoding import decode_document
from knowhub.ingest.loaders.markdown import (
    front_matter,
    front_matter_end,
    heading_title,
    markdown_headings,
)
from knowhub.models import Heading, LoadedDocument

__all__ = ["load_markdown", "load_plain_text", "load_rst", "rst_headings"]

# Any printable ASCII punctuation may adorn an RST section title (docutils spec,
# "Sections"); the run must be one repeated character.
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")
# docutils accepts an underline shorter than its title (with a warning) from 4 chars.
_SHORT_UNDERLINE_OK = 4


def load_markdown(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load Markdown or MDX; front matter keys go to ``metadata``, text stays whole (so
    lines are the file's), and the chunks start after the front matter.

    Args:
        path: the file; ``.mdx`` gives format ``mdx``, anything else ``markdown``.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by front matter ``title``, else its headings, else its stem.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    headings = markdown_headings(text)
    metadata = front_matter(text)
    declared = metadata.get("title")
    return LoadedDocument(
        text=text,
        title=pick_title(
            path, declared if isinstance(declared, str) else None, heading_title(headings)
        ),
        format="mdx" if path.suffix.lower() == ".mdx" else "markdown",
        headings=headings,
        metadata=metadata,
        # Its keys are metadata already; as a chunk it would only be noise that ranks.
        body_start=front_matter_end(text),
        warnings=warnings,
    )


def load_plain_text(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a ``.txt`` file: no headings.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by its first line when that is obviously a title (see
        :func:`first_line_title`), else by its stem.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    title = pick_title(path, first_line_title(text))
    return LoadedDocument(text=text, title=title, format="text", warnings=warnings)


def load_rst(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load reStructuredText with the section titles as headings.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by its first section title, else its stem.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    headings = rst_headings(text)
    return LoadedDocument(
        text=text,
        title=pick_title(path, heading_title(headings)),
        format="rst",
        headings=headings,
        warnings=warnings,
    )


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
    styles: list[tuple[str, bool]] = []
    headings: list[Heading] = []
    index = 0
    while index < len(lines):
        found = _title_at(lines, index)
        if found is None:
            index += 1
            continue
        style, title, used = found
        if style not in styles:
            styles.append(style)
        headings.append(Heading(styles.index(style) + 1, title, offsets[index]))
        index += used
    return tuple(headings)


def _title_at(lines: list[str], index: int) -> tuple[tuple[str, bool], str, int] | None:
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
