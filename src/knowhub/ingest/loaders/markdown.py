"""Markdown helpers: find headings, read front matter, write tables and safe text.

Loaders of other formats (docx, pptx, html, tables, json) emit Markdown so that
:func:`markdown_headings` finds their sections the same way it does in ``.md`` files.
Heading rules follow CommonMark 0.31 (ATX §4.2, setext §4.3, fences §4.5), minus
the corners that do not matter for section paths (containers, HTML blocks).
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any

from knowhub.models import Heading

__all__ = [
    "TABLE_BLOCK_CHARS",
    "escape_markdown",
    "front_matter",
    "front_matter_end",
    "heading_title",
    "markdown_headings",
    "markdown_table",
    "markdown_table_blocks",
]

TABLE_BLOCK_CHARS = 500
"""The most characters a Markdown table block holds (header and delimiter rows included)
unless one body row alone takes more; each block repeats the header. A block is chunked
whole, so this is how many rows share a chunk: measured on the example corpus, see
docs/formats.md#tables."""

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# Lines that start a list item or block quote: a setext underline after them is
# a thematic break, not a heading.
_NOT_PARAGRAPH = re.compile(r" {0,3}(?:[-+*][ \t]|\d{1,9}[.)][ \t]|>)")
_FRONT_MATTER_END = ("---", "...")
# Levels of YAML front matter read: its keys that matter are scalars and lists of them, and
# PyYAML recurses per level (900 levels: 6 s, then a RecursionError).
_FRONT_MATTER_NESTING = 32
# Line starts that Markdown would read as a heading, setext underline or fence.
_MARKUP_START = re.compile(r"^( {0,3})(#|`{3}|~{3}|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)


def markdown_headings(text: str) -> tuple[Heading, ...]:
    """Find the ATX (``# Title``) and setext (underlined) headings of Markdown text.

    Fenced code blocks and a leading YAML front matter block are skipped.

    Args:
        text: Markdown text.

    Returns:
        Headings in text order; ``char_start`` is the offset of the heading's first line.
    """
    headings: list[Heading] = []
    paragraph: list[tuple[int, str]] = []  # (offset, line) of the open paragraph
    setext_allowed = False
    fence: str | None = None
    for offset, line in _lines(text, _front_matter_lines(text)):
        if fence is not None:
            closing = _FENCE_CLOSE.fullmatch(line)
            if closing and closing[1][0] == fence[0] and len(closing[1]) >= len(fence):
                fence = None
            continue
        opening = _FENCE_OPEN.fullmatch(line)
        if opening and not (opening[1][0] == "`" and "`" in opening[2]):
            fence, paragraph = opening[1], []
            continue
        atx = _ATX.fullmatch(line)
        underline = _SETEXT.fullmatch(line)
        if atx:
            if atx[2]:
                headings.append(Heading(len(atx[1]), atx[2].strip(), offset))
            paragraph = []
        elif underline and paragraph and setext_allowed:
            level = 1 if underline[1][0] == "=" else 2
            title = " ".join(part.strip() for _, part in paragraph)
            headings.append(Heading(level, title, paragraph[0][0]))
            paragraph = []
        elif not line.strip() or (underline and underline[1][0] == "-"):
            paragraph = []
        elif paragraph:
            paragraph.append((offset, line))
        elif not line.startswith("    "):  # four spaces open an indented code block
            paragraph = [(offset, line)]
            setext_allowed = not _NOT_PARAGRAPH.match(line)
    return tuple(headings)


def _front_matter_lines(text: str) -> int:
    """Number of lines a leading ``---`` … ``---`` block takes, else 0."""
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return 0
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() in _FRONT_MATTER_END:
            return index + 1
    return 0


def front_matter_end(text: str) -> int:
    """Offset just past a leading ``---`` … ``---`` block (0 when there is none)."""
    count = _front_matter_lines(text)
    if not count:
        return 0
    offset = 0
    for _ in range(count):
        newline = text.find("\n", offset)
        offset = len(text) if newline < 0 else newline + 1
    return offset


def _lines(text: str, skip: int) -> Iterator[tuple[int, str]]:
    """Yield ``(offset, line)`` for each ``\\n``-separated line after the first ``skip``."""
    offset = 0
    for number, line in enumerate(text.split("\n")):
        if number >= skip:
            yield offset, line.rstrip("\r")
        offset += len(line) + 1


def front_matter(text: str) -> dict[str, Any]:
    """Read the simple key/values of a leading YAML front matter block.

    Args:
        text: Markdown text that may start with ``---`` … ``---``.

    Returns:
        Top-level keys whose values are scalars or lists of scalars (dates as ISO
        strings); ``{}`` when there is no block or it is not a YAML mapping.
    """
    count = _front_matter_lines(text)
    if not count:
        return {}
    import yaml

    block = "\n".join(text.split("\n")[1 : count - 1])
    if _nesting(block) > _FRONT_MATTER_NESTING:
        return {}  # PyYAML recurses per level, in time growing with the square of it
    try:
        parsed = yaml.safe_load(block)
    except (yaml.YAMLError, RecursionError):
        return {}
    if not isinstance(parsed, dict):
        return {}
    simple = {str(key): _simple_value(value) for key, value in parsed.items()}
    return {key: value for key, value in simple.items() if value is not None}


def _nesting(block: str) -> int:
    """How deep YAML ``block`` nests, roughly: its brackets, or its indentation."""
    depth = deepest = 0
    for char in block:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    indents = (len(line) - len(line.lstrip(" ")) for line in block.split("\n"))
    return max(deepest, max(indents, default=0) // 2)


def _simple_value(value: object) -> object:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list):
        items = [_simple_value(item) for item in value]
        if all(item is not None and not isinstance(item, list) for item in items):
            return items
    return None


def heading_title(headings: Sequence[Heading]) -> str | None:
    """The first level-1 heading's title, else the first heading's, else ``None``."""
    for heading in headings:
        if heading.level == 1:
            return heading.title
    return headings[0].title if headings else None


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """Render rows as Markdown tables whose header is the first row that fills the table.

    Rows above the header that fill at most half of the table's width (a title such as
    "Price list, valid from October", a note on units) are given first, as a line of
    text each: they name the table, not its columns. The body rows are split into blocks
    of at most :data:`TABLE_BLOCK_CHARS` characters (at least one row each), each
    repeating the header, so that a block fits in a chunk and every chunk of a table
    names its columns (the chunker keeps a block whole).

    Args:
        rows: table cells, row by row; short rows are padded.

    Returns:
        The Markdown text (blocks separated by a blank line), ``""`` for no rows.
    """
    return "\n\n".join(text for text, _, _ in markdown_table_blocks(rows))


def markdown_table_blocks(rows: Sequence[Sequence[str]]) -> list[tuple[str, int, int]]:
    """The blocks of :func:`markdown_table`, each with the first and last of ``rows`` it
    shows: the title lines from row 0, the first table block from the header, a later
    one from its first body row (its header is a copy), for a loader that maps the text
    to file lines."""
    if not rows:
        return []
    header = _header_index(rows)
    titles = [" ".join(_cell(value) for value in row if value.strip()) for row in rows[:header]]
    blocks = [("\n".join(escape_markdown(t) for t in titles if t), 0, header - 1)]
    width = max(len(row) for row in rows[header:])
    cells = [[_cell(value) for value in row] + [""] * (width - len(row)) for row in rows[header:]]
    head = _row(cells[0]) + "\n" + _row(["---"] * width)
    body = [_row(row) for row in cells[1:]]
    starts = _block_starts(len(head), [len(row) for row in body])
    blocks += [
        ("\n".join([head, *body[start:end]]), header + (start + 1 if start else 0), header + end)
        for start, end in itertools.pairwise([*starts, len(body)])
    ]
    return [block for block in blocks if block[0]]


def _header_index(rows: Sequence[Sequence[str]]) -> int:
    """The first row that fills more than half of the widest row's cells: the header; the
    rows above it that hold something are the table's title and notes (a spreadsheet's
    title row, a merged first row). An empty row is never a title."""
    filled = [sum(1 for value in row if value.strip()) for row in rows]
    half = max(filled) // 2
    for index, count in enumerate(filled):
        if count > half or count == 0:
            return index
    return 0


def _block_starts(head: int, rows: Sequence[int]) -> list[int]:
    """Where each block's body rows start, given the lengths of the header and the rows."""
    starts, size = [0], head
    for index, length in enumerate(rows):
        if index > starts[-1] and size + 1 + length > TABLE_BLOCK_CHARS:
            starts.append(index)
            size = head
        size += 1 + length
    return starts


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def escape_markdown(text: str) -> str:
    """Backslash-escape line starts that Markdown would read as headings or fences.

    Loaders that generate Markdown from other formats run body text through this,
    so a paragraph that happens to start with ``#`` does not become a section.

    Args:
        text: plain text, possibly several lines.

    Returns:
        The text with ``\\`` before such line starts.
    """
    return _MARKUP_START.sub(r"\1\\\2", text)
