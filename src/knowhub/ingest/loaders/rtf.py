"""RTF loader: a small tokenizer over the file's bytes, rendering paragraphs as Markdown.

No parsing library does what citations need here: the pure-Python ``striprtf`` returns
plain text only (no headings, no table cells), so the file is read by a tokenizer of its
own (RTF 1.9.1's control words, groups and destinations), at a cost bounded by its size:
one pass, groups on an explicit stack no deeper than :data:`MAX_GROUPS`, ``\\binN`` data
stepped over, and the file's deadline looked at every few thousand tokens.

A paragraph whose outline level (``\\outlinelevelN``, which pandoc writes) or style (Word's
and LibreOffice's ``\\s1`` "heading 1", whose stylesheet entry names the level) says it is
a heading becomes a ``#`` line; the "Title" style a level-1 heading, as in Word files.
Table rows (``\\intbl`` … ``\\cell`` … ``\\row``) become Markdown tables, list paragraphs
(``\\lsN``) ``- `` items. Text is decoded as RTF says: ``\\uN`` as Unicode (its ``\\ucN``
fallback skipped), ``\\'hh`` bytes by the font's charset (``\\fcharset204``: Cyrillic,
``134``: GBK), else by the document's ``\\ansicpgN`` (a double-byte code page's pairs
decoded together). Pictures, objects, headers, footers, footnotes, field instructions and
other ignorable destinations (``{\\*\\…}``) are left out.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    join_blocks,
    loader_error,
    pick_title,
)
from knowhub.ingest.loaders.markdown import (
    escape_markdown,
    heading_title,
    markdown_headings,
    markdown_table,
)
from knowhub.models import LoadedDocument

__all__ = ["MAX_GROUPS", "load_rtf"]

MAX_GROUPS = 1000
"""Groups open at once: Word nests a few dozen; deeper is no document (and each costs a
saved state)."""

_TOKEN = re.compile(
    rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?"  # a control word, its parameter, its delimiter
    rb"|\\'([0-9a-fA-F]{2})"  # a byte in the code page
    rb"|\\([^a-zA-Z'])"  # a control symbol
    rb"|([{}])"  # a group's start or end
    rb"|([^\\{}\r\n]+)"  # text
    rb"|[\r\n]+|\\",  # line ends (no text in RTF) and a backslash ending the file
)
_CHECK_EVERY = 4096
_PIECES = 4096
# Destinations whose text is no part of the document's body.
_SKIPPED = frozenset(
    {
        "colortbl",
        "listtable",
        "listoverridetable",
        "rsidtbl",
        "generator",
        "pict",
        "object",
        "header",
        "footer",
        "headerl",
        "headerr",
        "headerf",
        "footerl",
        "footerr",
        "footerf",
        "footnote",
        "annotation",
        "atnid",
        "atnauthor",
        "fldinst",
        "themedata",
        "colorschememapping",
        "datastore",
        "latentstyles",
        "xmlnstbl",
        "pgdsctbl",
        "listtext",
        "pntext",
        "pntxta",
        "pntxtb",
        "bkmkstart",
        "bkmkend",
        "ftnsep",
        "ftnsepc",
        "ftncn",
        "aftnsep",
        "aftnsepc",
        "aftncn",
        "shp",
        "shpinst",
        "shppict",
        "nonshppict",
        "userprops",
        "docvar",
        "mmathPr",
        "revtbl",
        "protusertbl",
        "listpicture",
        "filetbl",
        "xe",
        "tc",
        "txe",
        "template",
        "wgrffmtfilter",
    }
)
_INFO_FIELDS = frozenset({"title", "author", "subject"})
_SYMBOLS = {
    "line": "\n",
    "tab": " ",
    "emdash": "\u2014",
    "endash": "\u2013",
    "bullet": "\u2022",
    "lquote": "\u2018",
    "rquote": "\u2019",
    "ldblquote": "\u201c",
    "rdblquote": "\u201d",
    "emspace": " ",
    "enspace": " ",
    "qmspace": " ",
}
_PARAGRAPH_ENDS = frozenset({"par", "sect", "page"})
_START = re.compile(rb"\s*\{\\rtf")
_CONTROL_SYMBOLS = {b"~": " ", b"_": "-", b"-": "", b"{": "{", b"}": "}", b"\\": "\\"}
# \fcharsetN: the code page of a font's \'hh bytes (0 and 1: the document's \ansicpg).
_CHARSETS = {
    77: "mac_roman",
    128: "cp932",
    129: "cp949",
    130: "johab",
    134: "gbk",
    136: "cp950",
    161: "cp1253",
    162: "cp1254",
    163: "cp1258",
    177: "cp1255",
    178: "cp1256",
    186: "cp1257",
    204: "cp1251",
    222: "cp874",
    238: "cp1250",
    254: "cp437",
    255: "cp850",
}
_HEADING_STYLE = re.compile(r"(?i)heading\s*([1-9])")
_MAX_LEVEL = 6


@dataclass
class _State:
    """What a group holds, saved when a group opens and restored when it closes."""

    destination: str = ""  # "" is the body; a skipped one swallows its text
    font: int | None = None
    unicode_skip: int = 1  # \ucN: fallback characters after each \uN
    style: int = 0
    outline: int | None = None
    in_table: bool = False
    listed: bool = False
    list_level: int = 0
    group_start: bool = True  # nothing read in this group yet: its first word names it


@dataclass
class _Style:
    name: list[str] = field(default_factory=list)
    outline: int | None = None


def load_rtf(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an RTF document as Markdown text.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the text; the ``deadline`` is looked at as it is read.

    Returns:
        The document, titled by its ``\\info`` title, else its first heading, else its stem.

    Raises:
        LoaderError: the file is no RTF (it does not start with ``{\\rtf``), nests groups
            deeper than :data:`MAX_GROUPS`, or is over a limit.
    """
    if not _START.match(data):
        raise loader_error(
            path,
            "is not an RTF document (it does not start with {\\rtf): give it the "
            "extension of its format, or save it again as RTF",
        )
    reader = _Reader(path, CharBudget(path, limits), limits)
    reader.read(data)
    text = join_blocks(reader.blocks, None)  # counted as it was read
    headings = markdown_headings(text)
    metadata: dict[str, Any] = {k: v for k, v in reader.info().items() if k != "title" and v}
    return LoadedDocument(
        text=text,
        title=pick_title(path, reader.info().get("title"), heading_title(headings)),
        format="rtf",
        headings=headings,
        metadata=metadata,
        line_map=None,  # RTF's lines are markup: cited by section
    )


class _Reader:
    """One pass over the tokens, paragraphs collected as Markdown blocks."""

    def __init__(self, path: Path, budget: CharBudget, limits: Limits) -> None:
        self.path = path
        self.budget = budget
        self.limits = limits
        self.stack: list[_State] = []
        self.state = _State()
        self.codepage = "cp1252"
        self.default_font = 0
        self.fonts: dict[int, str] = {}
        self.styles: dict[int, _Style] = {}
        self.fields: dict[str, list[str]] = {}
        self.pending = bytearray()  # \'hh bytes, decoded together (double-byte pairs)
        self.skip = 0  # fallback characters of the last \uN still to skip
        self.paragraph: list[str] = []
        self.cell: list[str] = []
        self.row: list[str] = []
        self.table: list[list[str]] = []
        self.blocks: list[tuple[str, bool]] = []

    def read(self, data: bytes) -> None:
        position, count = 0, 0
        while position < len(data):
            match = _TOKEN.match(data, position)
            if match is None:  # unreachable: every byte starts some token
                break
            position = match.end()
            count += 1
            if count % _CHECK_EVERY == 0:
                self.limits.deadline.check(self.path, f"at byte {position:,}")
            if match[3] is not None:
                self.byte(int(match[3], 16))
                continue
            self.flush_bytes()
            if match[1] is not None:
                word, parameter = match[1].decode(), match[2]
                number = int(parameter) if parameter is not None else None
                if word == "bin" and number:
                    position += max(0, number)  # binary data: stepped over
                self.word(word, number)
            elif match[4] is not None:
                self.symbol(match[4])
            elif match[5] is not None:
                self.group(match[5])
            elif match[6] is not None:
                self.text(match[6])
        self.flush_bytes()
        self.end_paragraph()
        self.end_table()

    def group(self, brace: bytes) -> None:
        self.skip = 0
        if brace == b"{":
            if len(self.stack) >= MAX_GROUPS:
                raise loader_error(
                    self.path,
                    f"nests groups more than {MAX_GROUPS} deep: no document does; save it "
                    "again from its application",
                )
            self.stack.append(self.state)
            self.state = replace(self.state, group_start=True)
        elif self.stack:
            self.state = self.stack.pop()

    def word(self, word: str, number: int | None) -> None:
        self.skip = 0
        state = self.state
        if state.group_start:
            state.group_start = False
            if self.open_destination(word):
                return
        destination = state.destination
        if destination == "skip":
            return
        if destination == "fonttbl":
            self.font_word(word, number)
        elif destination == "stylesheet":
            self.style_word(word, number)
        elif word == "u" and number is not None:
            self.emit(_character(number))
            self.skip = state.unicode_skip
        else:
            self.format_word(word, number)

    def open_destination(self, word: str) -> bool:
        """Whether ``word``, the first of a group, names a destination it takes."""
        state = self.state
        if state.destination in ("skip", "fonttbl", "stylesheet"):
            return False
        if state.destination == "ignorable" or word in _SKIPPED:
            state.destination = "skip"
        elif word in ("fonttbl", "stylesheet", "info"):
            state.destination = word
        elif state.destination == "info":
            # The first of each field: LibreOffice writes the author twice.
            taken = word not in _INFO_FIELDS or word in self.fields
            state.destination = "skip" if taken else word
            if not taken:
                self.fields[word] = []
            return True
        else:
            return False
        return True

    def font_word(self, word: str, number: int | None) -> None:
        if word == "f" and number is not None:
            self.state.font = number
        elif word == "fcharset" and number in _CHARSETS and self.state.font is not None:
            self.fonts[self.state.font] = _CHARSETS[number]

    def style_word(self, word: str, number: int | None) -> None:
        if word in ("s", "cs", "ds", "ts"):
            # Character, section and table styles are no paragraph's: kept under -1.
            self.state.style = (number or 0) if word == "s" else -1
            self.styles.setdefault(self.state.style, _Style())
        elif word == "outlinelevel" and number is not None:
            self.styles.setdefault(self.state.style, _Style()).outline = number

    def format_word(self, word: str, number: int | None) -> None:
        state = self.state
        if word in _PARAGRAPH_ENDS:
            self.end_paragraph()
        elif word in _SYMBOLS:
            self.emit(_SYMBOLS[word])
        elif word in ("cell", "nestcell"):
            self.end_cell()
        elif word in ("row", "nestrow"):
            self.end_row()
        elif word == "pard":
            state.style, state.outline, state.in_table = 0, None, False
            state.listed, state.list_level = False, 0
        elif word == "plain":
            state.font = None
        elif word == "s":
            state.style = number or 0
        elif word == "outlinelevel":
            state.outline = number
        elif word == "intbl":
            state.in_table = True
        elif word == "ls":
            state.listed = bool(number)
        elif word == "ilvl":
            state.list_level = min(max(number or 0, 0), 8)
        elif word == "f":
            state.font = number
        elif word == "uc" and number is not None:
            state.unicode_skip = max(0, number)
        elif word == "ansicpg" and number is not None:
            self.codepage = _codec(f"cp{number}")
        elif word == "deff" and number is not None:
            self.default_font = number

    def symbol(self, symbol: bytes) -> None:
        state = self.state
        if symbol == b"*":
            if state.group_start and state.destination not in ("skip", "fonttbl", "stylesheet"):
                state.destination = "ignorable"
            return
        if symbol in (b"\n", b"\r"):
            self.word("par", None)
            return
        self.skip = 0
        if symbol in _CONTROL_SYMBOLS:
            self.emit(_CONTROL_SYMBOLS[symbol])

    def text(self, raw: bytes) -> None:
        self.state.group_start = False
        if self.skip:
            raw, self.skip = raw[self.skip :], max(0, self.skip - len(raw))
        if raw:
            self.emit(raw.decode(self.encoding(), "replace"))

    def byte(self, value: int) -> None:
        if self.skip:
            self.skip -= 1
            return
        self.pending.append(value)

    def flush_bytes(self) -> None:
        if self.pending:
            text = bytes(self.pending).decode(self.encoding(), "replace")
            self.pending.clear()
            self.emit(text)

    def encoding(self) -> str:
        font = self.state.font if self.state.font is not None else self.default_font
        return self.fonts.get(font, self.codepage)

    def emit(self, text: str) -> None:
        """Text for the state's destination: the paragraph, a style's name, an info field."""
        destination = self.state.destination
        if destination == "":
            self.budget.count(len(text))
            self.paragraph.append(text)
            if len(self.paragraph) > _PIECES:  # one string, not millions of small ones
                self.paragraph[:] = ["".join(self.paragraph)]
        elif destination == "stylesheet":
            self.styles.setdefault(self.state.style, _Style()).name.append(text)
        elif destination in _INFO_FIELDS:
            self.fields.setdefault(destination, []).append(text)

    def end_paragraph(self) -> None:
        if self.state.destination != "":
            return
        text = _fix_surrogates("".join(self.paragraph))
        self.paragraph.clear()
        if self.state.in_table:
            self.cell.append(text)
            return
        self.end_table()
        lines = [" ".join(line.split()) for line in text.split("\n")]
        paragraph = "\n".join(line for line in lines if line)
        if paragraph:
            self.blocks.append(self.block(paragraph))

    def block(self, text: str) -> tuple[str, bool]:
        level = self.heading_level()
        if level:
            return "#" * level + " " + " ".join(text.split()), False
        if self.state.listed:
            indent = "  " * self.state.list_level
            return f"{indent}- " + escape_markdown(" ".join(text.split())), True
        return escape_markdown(text), False

    def heading_level(self) -> int:
        """The paragraph's heading level (0: none), by its outline level, else its style."""
        outline = self.state.outline
        style = self.styles.get(self.state.style)
        if outline is None and style is not None:
            outline = style.outline
            named = "".join(style.name).split(";")[0].strip()
            if outline is None and (match := _HEADING_STYLE.fullmatch(named)):
                return min(int(match[1]), _MAX_LEVEL)
            if outline is None and named.casefold() == "title":
                return 1
        return min(outline + 1, _MAX_LEVEL) if outline is not None and 0 <= outline < 9 else 0

    def end_cell(self) -> None:
        self.cell.append(_fix_surrogates("".join(self.paragraph)))
        self.paragraph.clear()
        self.row.append(" ".join(" ".join(self.cell).split()))
        self.cell.clear()

    def end_row(self) -> None:
        if self.paragraph or self.cell:
            self.end_cell()
        if any(self.row):
            self.table.append(list(self.row))
        self.row.clear()

    def end_table(self) -> None:
        if self.table:
            self.blocks.append((markdown_table(self.table), False))
            self.table = []

    def info(self) -> dict[str, str]:
        return {
            name: " ".join(_fix_surrogates("".join(parts)).split())
            for name, parts in self.fields.items()
        }


def _character(number: int) -> str:
    """``\\uN``'s character: N is a signed 16-bit number (-4064 is U+F020); a number out of
    that range (no writer's) is U+FFFD."""
    code = number + 65536 if -32768 <= number < 0 else number
    return chr(code) if 0 <= code <= 0xFFFF else "\ufffd"


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "cp1252"


def _fix_surrogates(text: str) -> str:
    """``\\uN`` pairs that spell one character beyond the BMP, joined into it."""
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
