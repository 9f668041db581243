"""The passage of a document whose text a loader wrote, drawn rather than printed.

The HTML, Word, PowerPoint, PDF, spreadsheet, EPUB, OpenDocument, RTF and notebook
loaders write a document's structure as Markdown: headings as ``## Rates``, tables as
``| City | Rate |`` rows under a ``| --- |`` line, code between ``````` fences. Those
symbols are not in the document, so the source view draws them: a heading as a heading, a
table row as a row of cells, fences and separator lines not at all. A Markdown, text or
reStructuredText file is shown as it is written (its ``##`` are its author's, and citations
count its lines), as are formats whose loaders write no such structure. Every piece of text
is escaped; the cited span keeps its ``<mark>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markupsafe import Markup, escape

from knowhub.interfaces.http.console.passage import Block, Piece

__all__ = ["DRAWN_FORMATS", "draw"]

DRAWN_FORMATS = frozenset(
    {"html", "docx", "pptx", "pdf", "xlsx", "csv", "epub", "odt", "ods", "odp", "rtf", "ipynb"}
)
_HEADING = re.compile(r"(#{1,6})[ \t]+")
# No two "\s*" meet: spaces either side of an optional "|" were split between them in every
# way on a line that then failed (quadratic in its length); each run of spaces has one owner.
_SEPARATOR = re.compile(r"\s*\|\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*(?:\|\s*)?")
_ROW = re.compile(r"\s*\|.*\|\s*")
_FENCE = re.compile(r"\s*```.*")

Line = list[Piece]


def draw(blocks: Sequence[Block]) -> list[Markup]:
    """Each block's text as HTML, its Markdown structure drawn (one entry per block)."""
    drawn = []
    at_start = True  # whether the next block begins a line (the first one does)
    for block in blocks:
        lines = _lines(block.pieces)
        drawn.append(_block(lines, at_start or block.gap))
        text = "".join(p.text for p in block.pieces)
        at_start = text.endswith("\n") if text else at_start
    return drawn


def _lines(pieces: Sequence[Piece]) -> list[tuple[Line, bool]]:
    """The pieces cut at line breaks: each line's pieces and whether a break ends it."""
    lines: list[tuple[Line, bool]] = []
    current: Line = []
    for piece in pieces:
        *whole, rest = piece.text.split("\n")
        for text in whole:
            current.append(Piece(text, piece.marked))
            lines.append((current, True))
            current = []
        current.append(Piece(rest, piece.marked))
    lines.append((current, False))
    return lines


def _block(lines: list[tuple[Line, bool]], at_start: bool) -> Markup:
    out = []
    for n, (line, broken) in enumerate(lines):
        text = "".join(p.text for p in line)
        if not (at_start or n > 0):  # the end of a line an earlier block began
            out.append(_pieces(line) + ("\n" if broken else ""))
        elif _SEPARATOR.fullmatch(text) or _FENCE.fullmatch(text):
            continue  # a table's rule (drawn by its rows) or a code fence: not shown
        elif heading := _HEADING.match(text):
            level = len(heading.group(1))
            out.append(_wrap(f"src-h src-h{level}", _pieces(_cut(line, heading.end()))))
        elif _ROW.fullmatch(text):
            following = "".join(p.text for p in lines[n + 1][0]) if n + 1 < len(lines) else ""
            head = " src-head" if _SEPARATOR.fullmatch(following) else ""
            out.append(_wrap(f"src-row{head}", _cells(line)))
        else:
            out.append(_pieces(line) + ("\n" if broken else ""))
    return Markup("").join(out)


def _wrap(css: str, inner: Markup) -> Markup:
    # A block element ends its own line: the break after it would be an empty line.
    return Markup('<span class="{}">{}</span>').format(css, inner)


def _cells(line: Line) -> Markup:
    """``| a | b |`` as a span per cell (the outer pipes dropped)."""
    cells: list[Line] = [[]]
    for piece in line:
        first, *others = piece.text.split("|")
        cells[-1].append(Piece(first, piece.marked))
        cells += [[Piece(text, piece.marked)] for text in others]
    inner = cells[1:-1] if len(cells) > 2 else cells
    return Markup("").join(_wrap("src-cell", _pieces(_strip(cell))) for cell in inner)


def _strip(cell: Line) -> Line:
    """A cell without the spaces around its text (those are the table's padding)."""
    text = "".join(p.text for p in cell)
    lead, trail = len(text) - len(text.lstrip()), len(text.rstrip())
    return _cut(cell, lead, trail)


def _cut(line: Line, start: int, end: int | None = None) -> Line:
    """The pieces of ``line`` between character ``start`` and ``end`` of its text."""
    out: Line = []
    at = 0
    stop = sum(len(p.text) for p in line) if end is None else end
    for piece in line:
        lo, hi = max(start - at, 0), min(stop - at, len(piece.text))
        if hi > lo:
            out.append(Piece(piece.text[lo:hi], piece.marked))
        at += len(piece.text)
    return out


def _pieces(line: Line) -> Markup:
    return Markup("").join(
        Markup("<mark>{}</mark>").format(p.text) if p.marked else escape(p.text)
        for p in line
        if p.text  # an empty <mark> still shows, as a sliver
    )
