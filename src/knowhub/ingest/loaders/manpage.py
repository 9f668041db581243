"""Manual pages saved as text (``man tar > tar.txt``): sections, subsections and option
entries (and keyword entries: ``nameserver``, ``/proc/sys/fs/pipe-max-size``) as headings, the
NAME line as the title, and the terminal formatting of a page
rendered without ``col -b`` taken out.

What a rendered man page looks like (man-db and groff, mandoc alike): a header line
``TAR(1)   GNU TAR Manual   TAR(1)`` and a footer ending in ``TAR(1)``; section titles in
capitals at column 0 (``NAME``, ``SYNOPSIS``, ``OPTIONS``), each followed at once by its
indented body; subsection titles (``.SS``) indented less than the body (``   Operation
mode``); and option entries (``.TP``) at the body's indent, their description indented
further, on the next line (``-t, --list``) or on the same one past a gap (``-C     list
entries by columns``). An entry's own lines are what a question about that option needs, so
each entry is a heading one level below the section it is in, and the page's name heads
them all: its chunk is cited as ``tar(1) > DESCRIPTION > Operation mode > -t, --list``.
Text at the body's indent after a list of entries (``The SIZE argument is…``) belongs to
the section again, so the section's heading is repeated there: headings only open
sections, and that closes the last entry's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from knowhub.ingest.loaders.textlines import TAB_SIZE, TextLines
from knowhub.models import Heading

__all__ = ["ManPage", "man_page", "strip_terminal_formatting"]

# Overstrike, as grotty writes for a terminal: bold "N\bN", underline "_\bN" (both "_\bN\bN").
# The character struck over is what a terminal shows; what comes before a backspace is not.
_STRUCK = re.compile(r"[^\n\x08]\x08+")
# ANSI escapes: CSI (SGR "\x1b[1m" with GROFF_SGR=1 or groff 1.23) and OSC (its hyperlinks).
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?)")

# "TAR(1)   GNU TAR Manual   TAR(1)"; footers "GNU grep 3.8   2019-12-29   GREP(1)".
_HEADER = re.compile(r"\S[^\n]*?(?: {2,}|\t)[^\n]*\(\d\w*\)[ \t]*")
_HEADER_LENGTH = 200  # a page's width and then some; longer lines are not matched at all
# At most 40 characters, no ASCII lowercase (other scripts' is checked on each line found).
_SECTION_LINE = re.compile(r"^[^\W\d_a-z][^\na-z]{0,39}$", re.MULTILINE)
_SECTION_CHARS = frozenset(" -/&,'()")
# manpages-zh writes "NAME(名称)"; "LS(1)" alone on a line is no section title.
_PAGE_REFERENCE = re.compile(r"\(\d\w*\)")
_SECTION_WORDS = 5
_SUBSECTION_LENGTH = 60
_SUBSECTION_WORDS = 8
# An option: one or two dashes (ASCII, or groff's hyphen and minus), then its name.
_OPTION = re.compile(r"[-\u2010\u2212]{1,2}[\w?@#]")
# A header's page: its text up to the first section number, spaces allowed.
_HEADER_PAGE = re.compile(r"\s*(\S[^\t]*?\(\d\w*\))")
_PAGE = re.compile(r"(.*)\((\d\w*)\)")
# "tar - an archiving utility": the names, then a dash between spaces.
_NAME_SEPARATOR = re.compile(r"\s+[-\u2010\u2013\u2014\u2212]+\s+")
# "NAME", "NAME(名称)", "NAME 名称"; manpages-ru's "ИМЯ" (older pages: "НАЗВАНИЕ").
_NAME = re.compile(r"(?:NAME|ИМЯ|НАЗВАНИЕ)(?:\s*\(.*\)|\s.*)?")
_COMMAND = re.compile(r"[\w.+:@/-]+")
_COMMAND_WORDS = 8
_OPTION_LENGTH = 60
# A keyword entry's first word names a thing: a lower-case identifier (``nameserver``,
# ``size=bytes``, ``tcp_fin_timeout``), a path, or an upper-case one (``IN_ACCESS``,
# ``TMPDIR``); prose starts with a capital and ends in a stop.
_KEYWORD = re.compile(r"(?:[a-z_][\w.=:<>\[\]-]*|/[\w./<>-]+|[A-Z][A-Z0-9_]{2,})(?=\s|\(|$)")
_KEYWORD_WORDS = 6
_TERM_GAP = re.compile(r"\S+(?: \S+)*?(?= {2,}|\t)")
_TAG_WIDTH = 7  # groff's default .TP indent: where a description on the tag's line starts
_SENTENCE_END = tuple(".,;:")


@dataclass(frozen=True)
class ManPage:
    """What :func:`man_page` found."""

    headings: tuple[Heading, ...]
    title: str | None  # the NAME section's line, else the header's page name
    # Where its first section starts: the header line before it repeats the page's name
    # and would be a chunk of its own that matches any question naming the command.
    body_start: int


def strip_terminal_formatting(text: str) -> str:
    """``text`` without overstrikes and ANSI escapes (``man -Tutf8 tar > tar.txt``, or
    ``MAN_KEEP_FORMATTING``), as ``col -b`` and a terminal show it; lines stay lines.

    Args:
        text: decoded text.

    Returns:
        The text; the same object when it has neither.
    """
    if "\x08" in text:
        text = _STRUCK.sub("", text).replace("\x08", "")
    if "\x1b" in text:
        text = _ESCAPE.sub("", text)
    return text


def man_page(lines: TextLines) -> ManPage | None:
    """The structure of a rendered manual page; None when ``lines`` is not one (fewer than
    two capitalised section titles each followed at once by an indented body).

    Args:
        lines: the document's lines.

    Returns:
        Its sections (level 1), subsections (level 2) and option entries (one level below
        the heading they are under), in text order, and its title.
    """
    sections: dict[int, str] = {}
    for match in _SECTION_LINE.finditer(lines.text):
        if title := _section_title(lines, match.start()):
            sections[match.start()] = title
    if len(sections) < 2:
        return None
    body = Counter(lines.indent(lines.next(s)) for s in sections).most_common(1)[0][0]
    name_line, page = _name_line(lines, sections), _page_name(lines)
    headings = _Walk(lines, sections, body, _commands(name_line)).headings()
    if root := _root(name_line, page):
        # The page's name heads every path: an option entry's own words rarely name the
        # command (``-t, --list`` says "List the contents of an archive"), and a question
        # does ("tar --list"); without it, among other pages, the entry ranked 11th.
        nested = (Heading(h.level + 1, h.title, h.char_start) for h in headings)
        headings = (Heading(1, root, min(sections)), *nested)
    return ManPage(headings, name_line or page, min(sections))


def _section_title(lines: TextLines, start: int) -> str | None:
    line = lines.line(start)
    title = " ".join(line.split())
    if _is_header(line) or len(title.split()) > _SECTION_WORDS or title[-1] in ".,;:":
        return None
    if "  " in line.strip() or any(c.islower() for c in title):  # a table's header row
        return None
    if not all(c.isalnum() or c in _SECTION_CHARS for c in title):
        return None
    if _PAGE_REFERENCE.search(title):
        return None
    before, after = lines.previous(start), lines.next(start)
    follows_text = not lines.blank(before) and not _is_header(lines.line(before))
    if follows_text or lines.blank(after) or lines.indent(after) < 2:
        return None
    return title


class _Walk:
    """One pass over a man page's lines, keeping the section an option entry is under."""

    def __init__(
        self, lines: TextLines, sections: dict[int, str], body: int, commands: frozenset[str]
    ) -> None:
        self.lines, self.sections, self.body = lines, sections, body
        self.commands = commands  # the page's own (at, atq, atrm, batch): no keyword entries
        self.found: list[Heading] = []
        self.parent: Heading | None = None
        self.in_entry = False
        # Where the page's entries' descriptions start, once one shows it on a line of its
        # own: at(1) sets its entries with ``.TP 8``, past groff's default.
        self.column = body + _TAG_WIDTH

    def headings(self) -> tuple[Heading, ...]:
        for start in self.lines.starts(min(self.sections)):
            if not self.lines.blank(start):
                self._line(start)
        return tuple(self.found)

    def _line(self, start: int) -> None:
        lines = self.lines
        if (title := self.sections.get(start)) or (title := self._subsection(start)):
            self.parent = Heading(1 if start in self.sections else 2, title, start)
            self.found.append(self.parent)
            self.in_entry = False
        elif lines.indent(start) > self.body or _is_header(lines.line(start)):
            return
        elif (term := self._option(start)) and self.parent is not None:
            self.found.append(Heading(self.parent.level + 1, term, start))
            self.in_entry = True
        elif self.in_entry and self.parent is not None:
            # Text at the body's indent after the entries is the section's own again.
            self.found.append(Heading(self.parent.level, self.parent.title, start))
            self.in_entry = False

    def _subsection(self, start: int) -> str | None:
        """``   Operation mode``: indented less than the body, which follows at once."""
        lines = self.lines
        if not 0 < lines.indent(start) < self.body <= lines.indent(lines.next(start)):
            return None
        before = lines.previous(start)
        if not lines.blank(before) and before not in self.sections:
            return None
        title = " ".join(lines.line(start).split())
        if len(title) > _SUBSECTION_LENGTH or len(title.split()) > _SUBSECTION_WORDS:
            return None
        return None if title.endswith(_SENTENCE_END) or not title[0].isalpha() else title

    def _option(self, start: int) -> str | None:
        """The option or keyword an entry at the body's indent names (``-t, --list``,
        ``nameserver``, ``/proc/sys/fs/pipe-max-size``), else None."""
        lines, body = self.lines, self.body
        text = lines.line(start).expandtabs(TAB_SIZE).strip()
        if lines.indent(start) != body or not self._opens(start):
            return None
        if not _OPTION.match(text):
            return self._keyword(start, text)
        after = lines.next(start)
        following = None if lines.blank(after) else lines.indent(after)
        tag = self._tag(text)
        if tag is not None and tag[1] in ((following,) if following else self._columns()):
            self.column = tag[1] if following else self.column
            return tag[0]  # "-C     list entries by columns", maybe continued below
        if following is not None and following > body and len(text) <= _OPTION_LENGTH:
            self.column = following
            return " ".join(text.split())  # "-t, --list", described on the lines below
        return None

    def _keyword(self, start: int, text: str) -> str | None:
        """The keyword, file or setting an entry names (``nameserver IP-адрес``, ``multi``,
        ``tcp_fin_timeout (integer; …)``: a name, not prose) when its description is
        indented below it (starting on its line past a gap, or on the next); a
        parenthesis after the name is left out of the heading. Not the page's own
        commands: at(1) describes atq, atrm and batch in one DESCRIPTION, which a
        question about cancelling a job needs whole (the one-line ``atrm`` alone was too
        small a chunk to be relevant enough)."""
        after = self.lines.next(start)
        following = 0 if self.lines.blank(after) else self.lines.indent(after)
        name = _KEYWORD.match(text)
        if name is None or name[0] in self.commands or following <= self.body:
            return None
        gap = _TERM_GAP.match(text)  # two spaces at least: one is prose's ("backup - copy")
        rest = text[gap.end() :] if gap else ""
        if gap and self.body + len(text) - len(rest.lstrip()) == following:
            title = gap[0].split(" (", 1)[0]  # "multi  Допустимые значения …", continued below
        else:
            title = " ".join(text.split(" (", 1)[0].split())  # described on the lines below
        if len(title) > _OPTION_LENGTH or len(title.split()) > _KEYWORD_WORDS:
            return None
        if title.endswith(_SENTENCE_END):
            return None
        self.column = following
        return title

    def _columns(self) -> tuple[int, ...]:
        """Where a one-line entry's description may start: where the page's others do,
        or at groff's default tag width."""
        return self.column, self.body + _TAG_WIDTH

    def _opens(self, start: int) -> bool:
        """Whether an entry may start here: after a blank line, a title, or the description
        of the entry before (pages set with ``.PD 0`` leave no blank line between)."""
        before = self.lines.previous(start)
        if self.lines.blank(before) or self.lines.indent(before) > self.body:
            return True
        return bool(self.found) and self.found[-1].char_start == before

    def _tag(self, text: str) -> tuple[str, int] | None:
        """A tag and the column its description starts at, on one line: after a gap of
        two spaces, or after one where the tag fills groff's default tag width."""
        gap = _TERM_GAP.match(text)
        if gap is not None:
            rest = text[gap.end() :]
            return gap[0], self.body + gap.end() + len(rest) - len(rest.lstrip())
        for column in self._columns():
            width = column - self.body  # "-f file Reads …": one space where the tag fills it
            if len(text) > width and text[width - 1] == " " != text[width]:
                return text[:width].rstrip(), column
        return None


def _is_header(line: str) -> bool:
    """Whether ``line`` is a page's header or footer (checked cheaply first: the pattern
    backtracks over long lines)."""
    return (
        len(line) <= _HEADER_LENGTH
        and line.rstrip().endswith(")")
        and _HEADER.fullmatch(line) is not None
    )


def _name_line(lines: TextLines, sections: dict[int, str]) -> str | None:
    """``tar - an archiving utility``: the NAME section's first paragraph, in one line."""
    start = next((s for s, title in sections.items() if _NAME.fullmatch(title)), None)
    words: list[str] = []
    line = lines.next(start)
    while start is not None and not lines.blank(line) and line not in sections:
        words += lines.line(line).split()
        line = lines.next(line)
    return " ".join(words) or None


def _commands(name_line: str | None) -> frozenset[str]:
    """The commands a NAME line names (``at, batch, atq, atrm - queue, …``)."""
    parts = _NAME_SEPARATOR.split(name_line, maxsplit=1) if name_line else []
    if len(parts) != 2:
        return frozenset()
    return frozenset(name.strip() for name in parts[0].split(",") if name.strip())


def _root(name_line: str | None, page: str | None) -> str | None:
    """``tar(1)``: the command the NAME line names (``grep, egrep - …``: its first; up to
    eight words, ``gcloud compute ssh``), with the header's section number; else the header's
    page in lower case (``callgrind annotate(1)``). Headers are truncated (``DBUS-UPDATE-
    ACTIVA(1)``) and spaced where NAME lines are not, so NAME wins when both are there."""
    found = _PAGE.fullmatch(page or "")
    number = f"({found[2]})" if found else ""
    parts = _NAME_SEPARATOR.split(name_line, maxsplit=1) if name_line else []
    command = parts[0].split(",")[0].strip() if len(parts) == 2 else ""
    words = command.split()
    if 0 < len(words) <= _COMMAND_WORDS and all(_COMMAND.fullmatch(w) for w in words):
        return f"{command}{number}"
    return page.lower() if page else None


def _page_name(lines: TextLines) -> str | None:
    """``TAR(1)``, ``CALLGRIND ANNOTATE(1)``: the page the header line names."""
    first = lines.line(lines.first_text)
    found = _HEADER_PAGE.match(first) if _is_header(first) else None
    return found[1] if found else None
