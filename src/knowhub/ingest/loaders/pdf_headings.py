"""Section headings of a PDF, for its chunks' section paths: the outline (bookmarks) where
it has one, else lines set larger than the body text, or numbered and bold. Each heading is
placed on its page at the line that shows it, so a page holding the end of one section and
the start of the next is split there; one whose line is not found opens its page."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.models import Heading

__all__ = ["Line", "Mark", "font_marks", "outline_marks", "page_lines", "place_marks"]

# A damaged or hostile outline may hold millions of entries; real ones hold hundreds.
_MAX_OUTLINE = 10_000
_MAX_LEVEL = 6
# A heading line: this short, with a letter, not a sentence.
_MAX_HEADING_CHARS = 100
_SENTENCE_END = frozenset(".,;:!?。，；：！？、")
# Larger than the body by this much (body 10-11 pt; headings measured 12-20 pt).
_LARGER = 1.15
# A line repeated on this many pages is a running header or footer, not a heading.
_RUNNING = 3
# Heading lines holding more than this share of the letters: the body size was misjudged
# (headings hold a few per cent of a document's letters).
_MAX_SHARE = 0.2
_CHAPTER_WORDS = r"chapter|part|appendix|глава|часть|приложение|附录"
_NUMBERED = re.compile(
    r"(?P<dotted>\d{1,3}(?:\.\d{1,3}){0,5})\.?\s+\S"
    r"|第\s*[\d一二三四五六七八九十百]+\s*(?P<unit>[章部篇节])"
    rf"|(?i:{_CHAPTER_WORDS}|раздел|section)\s+[\dIVXLC]+\b"
)
# What may stand before a title on its line: a number, a letter, "第 3 章", "Глава 3".
# (Compared casefolded, without spaces.)
_LABEL = re.compile(
    r"[a-z]?\.?[\d.]{0,12}|[ivxlc]{1,6}\.?|第[\d一二三四五六七八九十百]+[章部篇节]"
    rf"|(?:{_CHAPTER_WORDS}|раздел|section)[\divxlc.]*"
)
_PAGE_NUMBER = re.compile(r"[\s.·…]+\d+$")
_FORCE_BOLD = 0x40000  # PDF font descriptor flag ForceBold (PDF 32000-1, table 123)
_BOLD_WEIGHT = 600


@dataclass(frozen=True)
class Mark:
    """A heading known to be on a page (0-based), not yet placed in the text."""

    page: int
    level: int
    title: str


@dataclass(frozen=True)
class Line:
    """One line of a page as PDFium sets it: its text, font size and boldness."""

    text: str
    size: float
    bold: bool


def outline_marks(pdf: Any, count: int) -> list[Mark]:
    """The PDF's outline entries that point at one of its ``count`` pages, in outline order
    (the caller holds PDFium's lock)."""
    marks: list[Mark] = []
    for bookmark in pdf.get_toc():
        if len(marks) == _MAX_OUTLINE:
            break
        destination = bookmark.get_dest()
        index = destination.get_index() if destination is not None else None
        title = " ".join((bookmark.get_title() or "").split())
        if title and index is not None and 0 <= index < count:
            marks.append(Mark(index, min(bookmark.level + 1, _MAX_LEVEL), title))
    return marks


def page_lines(textpage: Any) -> list[Line]:
    """The page's lines in text order, from PDFium's characters (whose generated line
    breaks end each line), each with the size of its largest letter and its first
    letter's boldness."""
    import pypdfium2.raw as pdfium_c

    lines: list[Line] = []
    chars: list[str] = []
    size, bold = 0.0, False
    for index in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage, index)
        if code == 0x0A:
            lines.append(Line("".join(chars).strip(), size, bold))
            chars, size, bold = [], 0.0, False
        elif code != 0x0D and not 0xD800 <= code <= 0xDFFF and code <= 0x10FFFF:
            chars.append(chr(code))
            if not chr(code).isspace():
                if size == 0.0:
                    bold = _is_bold(textpage, index)
                size = max(size, pdfium_c.FPDFText_GetFontSize(textpage, index))
    lines.append(Line("".join(chars).strip(), size, bold))
    return [line for line in lines if line.text]


def _is_bold(textpage: Any, index: int) -> bool:
    import ctypes

    import pypdfium2.raw as pdfium_c

    if pdfium_c.FPDFText_GetFontWeight(textpage, index) >= _BOLD_WEIGHT:
        return True
    flags = ctypes.c_int(0)
    length = pdfium_c.FPDFText_GetFontInfo(textpage, index, None, 0, ctypes.byref(flags))
    name = ctypes.create_string_buffer(length)
    pdfium_c.FPDFText_GetFontInfo(textpage, index, name, length, ctypes.byref(flags))
    return bool(flags.value & _FORCE_BOLD) or b"bold" in name.value.lower()


def font_marks(pages: Sequence[tuple[int, list[Line]]]) -> list[Mark]:
    """Headings of a PDF without an outline: lines set at least 15 % larger than the body
    (the size most of its letters have), or numbered ("3.1", "第 3 章", "Глава 3") and bold;
    short, not sentences, not repeated on every page. A heading that runs over two lines is
    one. Levels come from the numbering ("3.1.2" is 3), else from the size, largest first.
    None when such lines are too common to be headings."""
    body = _body_size(pages)
    running = _running_lines(pages)
    found: list[tuple[int, Line]] = []
    for page, lines in pages:
        last = -2  # the index of the page's last heading line
        for number, line in enumerate(lines):
            if line.text in running or not _is_heading(line, body):
                continue
            if number == last + 1 and _continues(found[-1][1], line):
                previous = found.pop()[1]
                line = Line(f"{previous.text} {line.text}", previous.size, previous.bold)
            found.append((page, line))
            last = number
    found = _without_contents(found)
    total = sum(len(line.text) for _, lines in pages for line in lines)
    if not found or sum(len(line.text) for _, line in found) > _MAX_SHARE * total:
        return []
    sizes = sorted({line.size for _, line in found}, reverse=True)
    return [Mark(page, _level(line, sizes), line.text) for page, line in found]


def _without_contents(found: list[tuple[int, Line]]) -> list[tuple[int, Line]]:
    """The heading lines less those of a table of contents: a heading's text followed by
    its page number ("3.1 Network ..... 12")."""
    texts = {line.text for _, line in found}
    return [
        (page, line)
        for page, line in found
        if (entry := _PAGE_NUMBER.sub("", line.text)) == line.text or entry not in texts
    ]


def _body_size(pages: Sequence[tuple[int, list[Line]]]) -> float:
    weights: Counter[float] = Counter()
    for _, lines in pages:
        for line in lines:
            weights[round(line.size * 2) / 2] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _running_lines(pages: Sequence[tuple[int, list[Line]]]) -> set[str]:
    counts = Counter(text for _, lines in pages for text in {line.text for line in lines})
    return {text for text, count in counts.items() if count >= _RUNNING}


def _is_heading(line: Line, body: float) -> bool:
    text = line.text
    if len(text) > _MAX_HEADING_CHARS or text[-1] in _SENTENCE_END:
        return False
    if not any(char.isalpha() for char in text):
        return False
    larger = body > 0 and line.size >= body * _LARGER
    return larger or (line.bold and _NUMBERED.match(text) is not None)


def _continues(previous: Line, line: Line) -> bool:
    """Whether ``line``, right after the heading ``previous``, is its second line: set the
    same, with no number of its own."""
    same = (previous.size, previous.bold) == (line.size, line.bold)
    return same and _NUMBERED.match(line.text) is None


def _level(line: Line, sizes: list[float]) -> int:
    numbered = _NUMBERED.match(line.text)
    if numbered is not None and numbered.group("dotted"):
        return min(numbered.group("dotted").count(".") + 1, _MAX_LEVEL)
    if numbered is not None and numbered.group("unit"):
        return 2 if numbered.group("unit") == "节" else 1
    return min(sizes.index(line.size) + 1, _MAX_LEVEL)


def place_marks(
    marks: Sequence[Mark], pages: Sequence[str], starts: Sequence[int]
) -> tuple[Heading, ...]:
    """The headings in text order: each at the start of the line of its page that shows its
    title (perhaps after a number), searched from the previous heading on that page on; else
    where that heading stands, or at the page's start.

    Args:
        marks: headings by page, in the order they come on each page.
        pages: each page's text.
        starts: where each page starts in the document's text.
    """
    cursors = [0] * len(pages)
    headings: list[Heading] = []
    for mark in marks:
        text = pages[mark.page]
        found = _line_showing(text, mark.title, cursors[mark.page])
        offset = cursors[mark.page] if found is None else found
        cursors[mark.page] = offset
        headings.append(Heading(mark.level, mark.title, starts[mark.page] + offset))
    return tuple(sorted(headings, key=lambda heading: heading.char_start))


def _line_showing(text: str, title: str, start: int) -> int | None:
    """Where the first line at or after ``start`` that shows ``title`` starts: the line
    (or it and the next, for a title that wraps) ends with the title, spacing and case
    aside, and what comes before the title is a label ("3.1", "第 3 章")."""
    wanted = _squash(title)
    line_start = text.rfind("\n", 0, start) + 1
    lines = text[line_start:].split("\n")
    offset = line_start
    for line, following in zip(lines, [*lines[1:], ""], strict=True):
        squashed = _squash(line)
        for candidate in (squashed, squashed + _squash(following)):
            if candidate.endswith(wanted) and squashed:
                label = candidate[: len(candidate) - len(wanted)]
                if len(label) < len(squashed) and _LABEL.fullmatch(label):
                    return offset
        offset += len(line) + 1
    return None


def _squash(text: str) -> str:
    return "".join(text.split()).casefold()
