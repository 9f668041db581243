"""Section titles that a ``.txt`` file shows by its layout alone.

Three kinds, tried in this order, and deliberately strict: a prose file must not sprout
headings, so a line that could as well be a list item, a table or a sentence is none.

- A **manual page** saved as text (:mod:`.manpage`): its sections, subsections and
  option entries; the other two kinds are not looked for in it.
- **Underlined titles**, as reStructuredText (:func:`.rst.title_at`) and Setext (``Title``
  over ``=====`` or ``-----``) write them: the title alone after a blank line (or first in
  the file), short, not ending like a sentence, not a table's row (no ``|``, no run of
  spaces); the adornment at least 3 characters; a blank line (or the end) after it. Levels
  by order of first appearance of each style, as docutils has them.
- **Numbered titles** at column 0 (``1. Introduction``, ``2.3 Scope``, ``2.3.1. Limits``),
  level by the number's depth (one deeper under an underlined title before them). The line
  is short, its text starts with a capital and does not end like a sentence; it follows a
  blank line (or starts the file), and not a lead-in ending in ``:``; the next line is not
  another numbered line (a list), nor indented to the text after the number (a list item's
  continuation), nor starting in lowercase (a numbered clause wrapped onto it); it has
  text of its own before the next numbered title, unless that one is its first
  subsection; and each number follows the one before (``2`` after ``1.4``, ``2.1`` after
  ``2``), the first being ``1`` or ``0``. Two at least, or none counts.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from knowhub.ingest.loaders.common import first_line_title
from knowhub.ingest.loaders.manpage import man_page
from knowhub.ingest.loaders.rst import Adornment, title_at
from knowhub.ingest.loaders.textlines import TextLines
from knowhub.models import Heading

__all__ = ["TextStructure", "text_structure"]

_TITLE_LENGTH = 72
_TITLE_WORDS = 10
# A line of one punctuation character repeated, 3 times at least (RST allows 2; in plain
# text "--" or "==" alone is too likely something else).
_ADORNMENT_LINE = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$", re.MULTILINE)
_NOT_A_TITLE = re.compile(r"\||\S {2,}\S")  # a table's row: cells between bars, or columns
_SENTENCE_END = tuple(".,;:!")
_NON_SPACE = re.compile(r"\S")
_SECOND_SENTENCE = re.compile(r"[.!?]\s+\w")
# "1. Introduction", "2.3 Scope", "2.3.1. Limits": up to 3 digits a part (not a year).
_NUMBERED = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){0,4})\.?[ \t]+(\S[^\n]*?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class TextStructure:
    """What the layout of a text file says.

    Attributes:
        headings: in text order.
        title: the title the structure names (a man page's NAME line, an underlined title
            that opens the file, else an obvious first line); None when there is none.
        body_start: where the content starts (after a man page's header line).
    """

    headings: tuple[Heading, ...]
    title: str | None
    body_start: int = 0


def text_structure(text: str) -> TextStructure:
    """Find the headings and title of plain text.

    Args:
        text: the document's text (terminal formatting already removed).

    Returns:
        Its headings (none when its layout shows no sections) and title.
    """
    lines = TextLines(text)
    man = man_page(lines)
    if man is not None:
        return TextStructure(man.headings, man.title or first_line_title(text), man.body_start)
    underlined = _underlined(lines)
    numbered = _numbered(lines, {h.char_start for h in underlined})
    headings = _nested(underlined, numbered)
    if underlined and lines.start_of(underlined[0].char_start) == lines.first_text:
        return TextStructure(headings, underlined[0].title)
    return TextStructure(headings, first_line_title(text))


def _underlined(lines: TextLines) -> tuple[Heading, ...]:
    styles: list[Adornment] = []
    headings: list[Heading] = []
    for match in _ADORNMENT_LINE.finditer(lines.text):
        found = _underlined_at(lines, match.start())
        if found is None:
            continue
        style, title, start = found
        if style not in styles:
            styles.append(style)
        headings.append(Heading(styles.index(style) + 1, title, start))
    return tuple(headings)


def _underlined_at(lines: TextLines, adornment: int) -> tuple[Adornment, str, int] | None:
    """The title this adornment line underlines (or overlines): its style, text and start."""
    title_line = lines.previous(adornment)
    for start in (title_line, adornment):  # underlined; over- and underlined
        if start is None:
            continue
        window = [lines.line(lines.previous(start)), lines.line(start)]
        following = lines.next(start)
        for _ in range(3):
            window.append(lines.line(following))
            following = lines.next(following)
        found = title_at(window, 1)
        if found is None or found[2] != (2 if start == title_line else 3):
            continue
        after = window[1 + found[2]]
        if not after.strip() and _titlelike(found[1]) and not _NOT_A_TITLE.search(found[1]):
            return found[0], found[1], start
    return None


def _titlelike(title: str) -> bool:
    return (
        len(title) <= _TITLE_LENGTH
        and len(title.split()) <= _TITLE_WORDS
        and any(char.isalpha() for char in title)
        and not title.endswith(_SENTENCE_END)
        and not _SECOND_SENTENCE.search(title)
    )


@dataclass(frozen=True)
class _Numbered:
    start: int
    number: tuple[int, ...]
    title: str
    column: int  # where the title starts: a list item's next lines are indented to it


def _numbered(lines: TextLines, taken: set[int]) -> tuple[Heading, ...]:
    candidates = [
        _Numbered(
            match.start(),
            tuple(int(part) for part in match[1].split(".")),
            match[2],
            match.start(2) - match.start(),
        )
        for match in _NUMBERED.finditer(lines.text)
        if match.start() not in taken
    ]
    shaped = [candidate for candidate in candidates if _numbered_shape(lines, candidate)]
    kept: list[_Numbered] = []
    for candidate, following in itertools.pairwise([*shaped, None]):
        if candidate is None or not _has_body(lines, candidate, following):
            continue
        if _follows(kept[-1].number if kept else None, candidate.number):
            kept.append(candidate)
    if len(kept) < 2:
        return ()
    return tuple(
        Heading(len(c.number), " ".join(lines.line(c.start).split()), c.start) for c in kept
    )


def _numbered_shape(lines: TextLines, candidate: _Numbered) -> bool:
    start, title = candidate.start, candidate.title
    if len(lines.line(start)) > _TITLE_LENGTH or not _titlelike(title):
        return False
    if not title[0].isalpha() or title[0].islower() or not lines.blank(lines.previous(start)):
        return False
    if _last_visible(lines.text, start) == ":":
        return False  # "Steps:" then a list
    following = lines.next(start)
    if lines.blank(following):
        return True
    text = lines.line(following).strip()
    continued = lines.indent(following) == candidate.column or text[0].islower()
    return not continued and not _NUMBERED.match(text)


def _last_visible(text: str, end: int) -> str:
    """The last non-space character before ``end`` ("" if none)."""
    index = end - 1
    while index >= 0 and text[index].isspace():
        index -= 1
    return text[index] if index >= 0 else ""


def _has_body(lines: TextLines, candidate: _Numbered, following: _Numbered | None) -> bool:
    """Text of its own before the next numbered line, unless that is its first subsection."""
    end = following.start if following else len(lines.text)
    if _NON_SPACE.search(lines.text, lines.end(candidate.start), end):
        return True
    return following is not None and following.number == (*candidate.number, 1)


def _follows(previous: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    """Whether ``number`` may come next: the first subsection, or the next at some depth."""
    if previous is None:
        return number[0] in (0, 1) and all(part == 1 for part in number[1:])
    if number == (*previous, 1):
        return True
    depth = len(number)
    return depth <= len(previous) and number == (*previous[: depth - 1], previous[depth - 1] + 1)


def _nested(underlined: tuple[Heading, ...], numbered: tuple[Heading, ...]) -> tuple[Heading, ...]:
    """Both kinds in text order, numbered titles one level below the underlined one before."""
    merged: list[Heading] = []
    above = 0
    tagged = [(h, True) for h in underlined] + [(h, False) for h in numbered]
    for heading, is_underlined in sorted(tagged, key=lambda pair: pair[0].char_start):
        if is_underlined:
            above = heading.level
            merged.append(heading)
        else:
            merged.append(Heading(heading.level + above, heading.title, heading.char_start))
    return tuple(merged)
