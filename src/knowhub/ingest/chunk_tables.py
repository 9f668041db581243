"""Find the Markdown tables among a section's paragraphs and cut them into row windows.

A table (a header row, a delimiter row such as ``| --- | :-: |``, then body rows:
GFM §4.10) is chunked on its own, never packed with the prose around it, so that a
chunk of rows is not diluted by the text beside the table, nor a paragraph by rows.
It is cut between rows only: the first window opens with the header row (and
whatever its paragraph holds before it, such as the section's heading line), each
next one with a row, and each takes as many rows as fit ``size`` (one at least).

A window can only hold text that is contiguous in the document, so a later window
repeats the header only when the text does: loaders render a table as blocks that
each repeat the header and are smaller than the default chunk size
(:func:`~knowhub.ingest.loaders.markdown.markdown_table`), each a table of its own
here, so every chunk of a loaded table names its columns; a table written by hand
in Markdown that is longer than ``size`` names them in its first window only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["table_windows"]

_Span = tuple[int, int]

# Cells of dashes, each with optional alignment colons, between pipes.
_DELIMITER_ROW = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)*[ \t]*:?-+:?[ \t]*\|?[ \t]*\r?")


def table_windows(
    text: str, paragraph: _Span, size: int, measure: Callable[[int, int], int]
) -> list[_Span] | None:
    """The row windows of the table that ``paragraph`` holds; None when it holds none.

    Args:
        text: the document's text.
        paragraph: a blank-line separated paragraph of it, trimmed.
        size: the most a window holds, in ``measure``'s unit; a window of one row
            (with the header, for the first) may hold more.
        measure: the size of ``text[start:end]``.

    Returns:
        Contiguous, non-overlapping spans covering ``paragraph``, cut at row ends
        (a window may end in the whitespace that ends a row).
    """
    found = _table(text, paragraph)
    if found is None:
        return None
    head_end, rows = found
    windows: list[_Span] = []
    start, end = paragraph[0], head_end
    for row_start, row_end in rows:
        if end > head_end and measure(start, row_end) > size:  # at least one row each
            windows.append((start, end))
            start = row_start
        end = row_end
    windows.append((start, end))
    return windows


def _table(text: str, paragraph: _Span) -> tuple[int, list[_Span]] | None:
    """Where the table's delimiter row ends, and its body rows' spans."""
    start, end = paragraph
    if text.find("|", start, end) < 0:  # the cheap test that rejects most paragraphs
        return None
    lines = _lines(text, start, end)
    for index in range(1, len(lines)):
        line_start, line_end = lines[index]
        if (
            _DELIMITER_ROW.fullmatch(text, line_start, line_end)
            and text.find("|", line_start, line_end) >= 0
            and text.find("|", *lines[index - 1]) >= 0
        ):
            return line_end, lines[index + 1 :]
    return None


def _lines(text: str, start: int, end: int) -> list[_Span]:
    spans = []
    while (newline := text.find("\n", start, end)) >= 0:
        spans.append((start, newline))
        start = newline + 1
    spans.append((start, end))
    return spans
