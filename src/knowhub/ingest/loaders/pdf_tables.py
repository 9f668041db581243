"""Find the tables on a PDF page's text layer, so that the page can give them as Markdown.

A PDF has no tables, only characters placed on a page (and lines drawn between them); PDFium's
text gives a table's cells row by row, separated by spaces, so its rows are chunked as prose
and lose their column names. This module finds tables the way the "stream" (text alignment)
methods do (Nurminen 2013, *Algorithmic extraction of data in tables in PDF documents*, used
by Tabula and Camelot), kept simple and conservative: a page with no table found is extracted
exactly as before, so a miss costs nothing that was not already lost.

1. Characters (PDFium's loose boxes: the font's full height and advance) are grouped into
   lines by their bottom, and a line into cells wherever two characters are at least
   :data:`_COLUMN_GAP` of the line's height apart, or a drawn vertical line (a ruled table's
   border) runs between them.
2. A table is a run of lines, close together, of two cells or more (a line of one cell may
   continue a row when its cell is not in the first column, or, in a ruled table, when no
   drawn line separates it from the row above), whose cells fall into the same columns: the
   columns are the union of the cells' extents, and no line may put two cells in one column.
   It needs a header and at least two rows.
3. It is prose, not a table, when a column holds lines of running text: long (median
   :data:`_PROSE_CHARS` characters or more) and mostly reaching the column's right edge, as
   the lines of a two-column page do.

In a ruled table, drawn horizontal lines across it separate the rows, so a cell's wrapped
lines stay in its row.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Glyph", "Rules", "Table", "find_tables"]

# A gap between two characters of a line that is at least this many times the line's height
# (PDFium's loose box, ~1.2 em) separates cells; words are ~0.25 em apart.
_COLUMN_GAP = 0.8
# Characters whose bottoms differ by less than this many heights share a line.
_SAME_LINE = 0.3
# Lines further apart than this many heights (bottom to bottom) are not one table.
_ROW_SPACING = 2.5
_MIN_LINES = 3  # a header and two rows: fewer is too little evidence without a grid
# Running text: a column whose median line is this long and whose lines mostly end near its
# right edge (within a height) is a column of prose.
_PROSE_CHARS = 20
_PROSE_FILLED = 0.6
# A cell that is a number (an amount, a size, a percentage): data, never a column's name.
_NUMBER = re.compile(r"[-+−]?[\d\s.,]*\d[\d\s.,]*%?")
_RULE_THICKNESS = 2.0  # a path thinner than this (points) is a drawn line
# Letters of a word touch (loose boxes); a wider gap with no space character between is a
# space all the same (PDFs that place words instead of writing spaces).
_WORD_GAP = 0.15


@dataclass(frozen=True)
class Glyph:
    """A character of the page and its loose box, in PDF points (y grows upwards)."""

    char: str
    left: float
    bottom: float
    right: float
    top: float


@dataclass(frozen=True)
class Rules:
    """The page's drawn lines (and the edges of its drawn rectangles).

    Attributes:
        vertical: ``(x, bottom, top)`` of each vertical line.
        horizontal: ``(y, left, right)`` of each horizontal line.
    """

    vertical: tuple[tuple[float, float, float], ...] = ()
    horizontal: tuple[tuple[float, float, float], ...] = ()

    @classmethod
    def from_boxes(cls, boxes: Sequence[tuple[float, float, float, float]]) -> Rules:
        """The lines of path objects given by their bounds ``(left, bottom, right, top)``:
        a thin one is a line, any other is taken as a rectangle's four edges (a table cell's
        border; a curve's box only matters if text crosses it)."""
        vertical: list[tuple[float, float, float]] = []
        horizontal: list[tuple[float, float, float]] = []
        for left, bottom, right, top in boxes:
            if right - left < _RULE_THICKNESS:
                vertical.append(((left + right) / 2, bottom, top))
            elif top - bottom < _RULE_THICKNESS:
                horizontal.append(((bottom + top) / 2, left, right))
            else:
                vertical += [(left, bottom, top), (right, bottom, top)]
                horizontal += [(bottom, left, right), (top, left, right)]
        return cls(tuple(vertical), tuple(horizontal))

    def splits(self, left: float, right: float, bottom: float, top: float) -> bool:
        """Whether a vertical line runs between x ``left`` and ``right`` across the band."""
        middle = (bottom + top) / 2
        return any(left < x < right and low <= middle <= high for x, low, high in self.vertical)

    def separates(self, above: _Line, below: _Line) -> bool:
        """Whether a horizontal line runs between two lines, under the first one's first cell."""
        upper, lower = (above.bottom + above.top) / 2, (below.bottom + below.top) / 2
        x = (above.cells[0].left + above.cells[0].right) / 2
        return any(lower < y < upper and low <= x <= high for y, low, high in self.horizontal)


@dataclass(frozen=True)
class Table:
    """A table found on a page.

    Attributes:
        rows: cell texts, the header first; every row as wide as the table.
        top: a height between the table's first line and the line above it (or the top of
            its first line); text above it is the page's text before the table.
        bottom: likewise below its last line.
    """

    rows: list[list[str]]
    top: float
    bottom: float


@dataclass
class _Cell:
    text: str
    left: float
    right: float


@dataclass
class _Line:
    bottom: float
    top: float
    cells: list[_Cell] = field(default_factory=list)

    @property
    def height(self) -> float:
        return self.top - self.bottom


def find_tables(glyphs: Sequence[Glyph], rules: Rules = Rules()) -> list[Table]:
    """The tables among a page's characters, top to bottom.

    Args:
        glyphs: the page's characters (spaces included: they separate words), any order.
        rules: the page's drawn lines.

    Returns:
        The tables found; ``[]`` for a page of prose.
    """
    lines = _lines(glyphs, rules)
    tables: list[Table] = []
    start = 0
    while start < len(lines):
        end = _run_end(lines, start, rules)
        table = _table(lines, start, end, rules) if end - start >= _MIN_LINES else None
        if table is not None:
            tables.append(table)
            start = end
        else:
            start += 1
    return tables


def _lines(glyphs: Sequence[Glyph], rules: Rules) -> list[_Line]:
    """The page's lines, top to bottom, each cut into cells."""
    ordered = sorted(glyphs, key=lambda glyph: (-glyph.bottom, glyph.left))
    groups: list[list[Glyph]] = []
    for glyph in ordered:
        if glyph.top <= glyph.bottom:
            continue  # PDFium's generated line breaks have no box
        if groups:
            first = groups[-1][0]
            if abs(first.bottom - glyph.bottom) < _SAME_LINE * (first.top - first.bottom):
                groups[-1].append(glyph)
                continue
        groups.append([glyph])
    lines = [_cut(group, rules) for group in groups]
    return [line for line in lines if line.cells]


def _cut(group: list[Glyph], rules: Rules) -> _Line:
    """A line of glyphs cut into cells at wide gaps and at drawn vertical lines."""
    line = _Line(min(g.bottom for g in group), max(g.top for g in group))
    gap = _COLUMN_GAP * line.height
    cell: _Cell | None = None
    space = False
    for glyph in sorted(group, key=lambda g: g.left):
        if glyph.char.isspace():
            space = True
            continue
        if cell is not None and glyph.left - cell.right > _WORD_GAP * line.height:
            space = True
        if cell is None or _apart(cell.right, glyph.left, gap, line, rules):
            cell = _Cell(glyph.char, glyph.left, glyph.right)
            line.cells.append(cell)
        else:
            cell.text += (" " if space else "") + glyph.char
            cell.right = max(cell.right, glyph.right)
        space = False
    return line


def _apart(right: float, left: float, gap: float, line: _Line, rules: Rules) -> bool:
    return left - right >= gap or rules.splits(right, left, line.bottom, line.top)


def _run_end(lines: list[_Line], start: int, rules: Rules) -> int:
    """Where the run of lines that could be one table, starting at ``start``, ends."""
    if len(lines[start].cells) < 2:
        return start + 1
    first_left = lines[start].cells[0].left
    ruled = start > 0 and rules.separates(lines[start - 1], lines[start])
    end = start + 1
    while end < len(lines):
        above, line = lines[end - 1], lines[end]
        if above.bottom - line.bottom > _ROW_SPACING * line.height:
            break
        if len(line.cells) < 2 and not _continues(above, line, first_left, ruled, rules):
            break
        ruled = ruled or rules.separates(above, line)
        end += 1
    while len(lines[end - 1].cells) < 2:  # a run ends on a row, not on a wrapped cell
        end -= 1
    return end


def _continues(above: _Line, line: _Line, first_left: float, ruled: bool, rules: Rules) -> bool:
    """Whether a line of one cell is more of the row above: it is not in the first column
    (prose after a table starts at its left), or the run is ruled (a drawn line separated
    two of its lines) and no drawn line separates this one from the row above."""
    if line.cells[0].left > first_left + _COLUMN_GAP * line.height:
        return True
    return ruled and not rules.separates(above, line)


def _table(lines: list[_Line], start: int, end: int, rules: Rules) -> Table | None:
    """The table that ``lines[start:end]`` form, or None when they are no table."""
    run = lines[start:end]
    columns = _columns(run)
    placed = [_place(line, columns) for line in run]
    if not _is_grid(run, columns, placed, rules):
        return None
    rows = _rows(run, [cells for cells in placed if cells is not None], rules)
    if len(rows) < _MIN_LINES or _is_prose(run, columns):
        return None
    top = run[0].top if start == 0 else (lines[start - 1].bottom + run[0].top) / 2
    bottom = run[-1].bottom if end == len(lines) else (run[-1].bottom + lines[end].top) / 2
    return Table(rows if _has_header(rows) else [[""] * len(columns), *rows], top, bottom)


def _is_grid(
    run: list[_Line],
    columns: list[tuple[float, float]],
    placed: list[list[str] | None],
    rules: Rules,
) -> bool:
    """Whether the run's cells line up in columns: no line puts two cells in one column,
    and each column holds cells of two lines or more. Three columns at least, or two with
    drawn lines: two columns of text alone are as often a list of terms and their
    definitions, or a table of contents, as a table."""
    if len(columns) < 2 or any(cells is None for cells in placed):
        return False
    if any(sum(bool(cells[i]) for cells in placed if cells) < 2 for i in range(len(columns))):
        return False
    ruled = any(rules.separates(above, line) for above, line in itertools.pairwise(run))
    return len(columns) > 2 or ruled or _split_by_rules(run[0], rules)


def _split_by_rules(line: _Line, rules: Rules) -> bool:
    cells = line.cells
    return any(
        rules.splits(left.right, right.left, line.bottom, line.top)
        for left, right in itertools.pairwise(cells)
    )


def _has_header(rows: list[list[str]]) -> bool:
    """A header names its columns: a number in the first row is data (a table whose rows
    are all data is given an empty header, so that no row is taken for the column names)."""
    return not any(_NUMBER.fullmatch(cell) for cell in rows[0])


def _columns(run: list[_Line]) -> list[tuple[float, float]]:
    """The union of the cells' extents: ``(left, right)`` of each column, left to right."""
    spans = sorted((cell.left, cell.right) for line in run for cell in line.cells)
    columns: list[tuple[float, float]] = []
    for left, right in spans:
        if columns and left < columns[-1][1]:
            columns[-1] = (columns[-1][0], max(columns[-1][1], right))
        else:
            columns.append((left, right))
    return columns


def _place(line: _Line, columns: list[tuple[float, float]]) -> list[str] | None:
    """The line's cells by column; None when two cells fall in one column."""
    cells = [""] * len(columns)
    for cell in line.cells:
        index = next(i for i, (left, right) in enumerate(columns) if left <= cell.left < right)
        if cells[index]:
            return None
        cells[index] = cell.text
    return cells


def _rows(run: list[_Line], placed: list[list[str]], rules: Rules) -> list[list[str]]:
    """Lines joined into rows. In a grid the drawn lines separate the rows, as a row's cells
    may sit beside any line of a wrapped one; otherwise a line of one cell continues the row
    above."""
    separated = [rules.separates(above, line) for above, line in itertools.pairwise(run)]
    grid = _is_ruled_grid(placed, separated)
    rows = [placed[0]]
    for line, cells, apart in zip(run[1:], placed[1:], separated, strict=True):
        if apart if grid else len(line.cells) > 1:
            rows.append(cells)
        else:
            rows[-1] = [" ".join(filter(None, pair)) for pair in zip(rows[-1], cells, strict=True)]
    return rows


def _is_ruled_grid(placed: list[list[str]], separated: list[bool]) -> bool:
    """Whether a drawn line runs between every two lines that start a row (fill the first
    column): a fully ruled table, not one with rules under its header only."""
    since = False
    for cells, apart in zip(placed[1:], separated, strict=True):
        since = since or apart
        if cells[0]:
            if not since:
                return False
            since = False
    return any(separated)


def _is_prose(run: list[_Line], columns: list[tuple[float, float]]) -> bool:
    """Whether the run is columns of running text: every column's lines are long (the
    columns of a page of ragged text), or one column's lines are long and mostly fill it
    (justified or CJK text, beside short notes)."""
    height = statistics.median(line.height for line in run)
    long, filled = [], []
    for left, right in columns:
        cells = [c for line in run for c in line.cells if left <= c.left < right]
        long.append(statistics.median(len(c.text) for c in cells) >= _PROSE_CHARS)
        full = sum(right - c.right < height for c in cells) >= _PROSE_FILLED * len(cells)
        filled.append(long[-1] and full)
    return all(long) or any(filled)
