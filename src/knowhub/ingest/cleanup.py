"""Rule-based cleanup of extracted text (``ingest.cleanup``, on by default).

Text taken out of a PDF, an Office file or an OCR'd image carries the page's furniture and
typesetting: running headers and footers on every page ("ACME Confidential — Page 7"),
words hyphenated across line breaks ("infor-\\nmation", which no search for "information"
finds), runs of spaces from justified lines and piles of blank lines. Three passes remove
them, each as :mod:`knowhub.ingest.textedit` edits, so pages, headings and the text chunks
point into stay in step. A document with none of these comes out unchanged (the same
object), and one cited by file lines (Markdown, text, HTML) is never touched.

Repeated headers and footers (PDFs and scanned images only): within the first and the last
:data:`_ZONE_LINES` non-blank lines of each page (fewer on a short page, which keeps a line
of its own), a line is furniture when the same line, with its digits ignored (page numbers,
dates) — or nearly the same letters, as OCR reads a running head a little otherwise on each
page — stands in the same zone on at least :data:`_MIN_SHARE` of the pages of a document of
at least :data:`_MIN_PAGES` pages. Zones leave every page at least one line of its own, so a
document of one- or two-line pages (a log, labels) keeps its text; pages that repeat whole
(copies of one form) do lose their repeated first and last lines. Two
pages cannot tell a header from a title both happen to start with; 60 % rather than all
pages, because title pages and chapter openings commonly go without the running head (3 of
5 pages, 6 of 10). Only short lines (:data:`_MAX_FURNITURE_CHARS`) that are not table rows
count: a table's header row repeated on each page of a long table is content. A title the
loader took from the running head is picked again from the cleaned text.

Hyphenation: a letter, ``-`` (or a soft hyphen) at a line's end, then a lowercase letter
starting the next line, in Latin or Cyrillic script (PDFium gives such a hyphen as U+0002,
the line break dropped: joined the same way). Whether that hyphen is typesetting
("infor-mation") or a compound's ("self-employed") cannot be told without a dictionary, so
the document itself decides: when it spells the hyphenated form elsewhere ("self-employed"
on one line), the hyphen is kept and only the line break goes; otherwise the word is joined,
as line-end hyphens in running text are mostly the typesetter's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from difflib import SequenceMatcher

from knowhub.ingest.loaders.common import first_line_title
from knowhub.ingest.textedit import Edit, apply_edits
from knowhub.models import LoadedDocument

__all__ = ["clean_document"]

# Pages that were printed (or scanned): slides are pages too, but a line on most of them is
# the author's (a note repeated under each slide), not a typesetter's running head.
_PRINTED_FORMATS = frozenset({"pdf", "image"})
_ZONE_LINES = 3
_MIN_PAGES = 3
_MIN_SHARE = 0.6
_MAX_FURNITURE_CHARS = 120
# OCR'd furniture: lines of at least this many letters whose letters are this alike.
_MIN_FUZZY_LETTERS = 4
_FUZZY_RATIO = 0.8
# Cyrillic letters OCR gives for Latin ones on a page read with both models ("Раде").
_LOOK_ALIKES = str.maketrans("аеорсухкмтнвіјѕ", "aeopcyxkmthbijs")

_LINE = re.compile(r"[^\n]+")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
# Latin (with its accented letters) and Cyrillic: the scripts whose typesetting hyphenates
# words at line ends this way (CJK breaks lines anywhere, with no hyphen).
_LETTER = r"[A-Za-z\u00c0-\u024f\u0400-\u04ff]"
_LOWER = r"[a-z\u00df-\u00ff\u0430-\u045f]"
# PDFium writes a hyphen ending a line as U+0002 and drops the line break ("infor\x02mation"):
# joined like any other; one where no word goes on is given back its hyphen.
_PDFIUM_HYPHEN = "\x02"
# The hyphen and the line break (with any spaces around it) between two letters, the second
# lowercase; found from the hyphen, so the scan costs one pass whatever the words' length.
_LINE_END_HYPHEN = re.compile(
    rf"(?<={_LETTER})(?:[-\u00ad][ \t]*\n[ \t]*|{_PDFIUM_HYPHEN})(?={_LOWER})"
)
_HYPHENATED_WORD = re.compile(rf"{_LETTER}+(?:-{_LETTER}+)+")
_WORD_START = re.compile(rf"{_LETTER}+")
_IS_LETTER = re.compile(_LETTER)
_MAX_WORD = 64  # letters looked back for a hyphenated word's first half
# Two or more spaces between words on a line, and spaces or tabs ending a line. A line that
# starts with "|" is a table row whose padding is its layout: left alone.
_INNER_SPACES = re.compile(r"(?<=\S)[ \u00a0]{2,}(?=\S)")
_TRAILING_SPACES = re.compile(r"[ \t\u00a0]+(?=\n|\Z)")
_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){2,}")


def clean_document(doc: LoadedDocument) -> LoadedDocument:
    """``doc`` without repeated headers and footers, line-break hyphens and runs of
    whitespace; ``doc`` itself when it has none of them or is cited by file lines."""
    if doc.line_map is not None:
        return doc
    furniture = _furniture(doc)
    cleaned = apply_edits(doc, furniture)
    if any(_holds_line(doc.text, edit, doc.title) for edit in furniture):
        # The loader took the running head for the title ("ACME Confidential — Page 1").
        cleaned = replace(cleaned, title=first_line_title(cleaned.text) or doc.title)
    cleaned = apply_edits(cleaned, _hyphenation(cleaned.text))
    return apply_edits(cleaned, _whitespace(cleaned.text))


# -- repeated headers and footers -------------------------------------------------------


def _furniture(doc: LoadedDocument) -> list[Edit]:
    """Edits removing the header and footer lines repeated on most pages."""
    pages = _pages(doc) if doc.format in _PRINTED_FORMATS else []
    if len(pages) < _MIN_PAGES:
        return []
    blocks = [(i.start, i.end) for i in doc.images if i.start is not None and i.end is not None]
    zones = [_zones(doc.text, start, end, blocks) for start, end in pages]
    groups = _Groups()
    named = [[(groups.of(where, key), span) for where, key, span in zone] for zone in zones]
    counts: Counter[int] = Counter()
    for zone in named:
        counts.update({group for group, _ in zone})
    needed = max(_MIN_PAGES, _MIN_SHARE * len(pages))
    spans = [span for zone in named for group, span in zone if counts[group] >= needed]
    return _merged([_line_removal(doc.text, span) for span in spans])


class _Groups:
    """Lines told alike across pages: the same once digits and spacing are ignored, or, for
    lines of letters, nearly the same letters (OCR reads a running head a little otherwise
    on each page: "Page 4 of 10", "Page4ocf 10", "Раде 3 of 10")."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], int] = {}
        self.similar: list[tuple[str, str, int]] = []  # (where, letters, group)

    def of(self, where: str, key: str) -> int:
        if (where, key) in self.found:
            return self.found[where, key]
        letters = _letters(key)
        group = len(self.found)
        if len(letters) >= _MIN_FUZZY_LETTERS:
            for side, known, number in self.similar:
                if side == where and _alike(letters, known):
                    group = number
                    break
            else:
                self.similar.append((where, letters, group))
        self.found[where, key] = group
        return group


def _letters(key: str) -> str:
    """The line's letters, Cyrillic look-alikes of Latin ones read as Latin."""
    return "".join(ch for ch in key.translate(_LOOK_ALIKES) if ch.isalpha())


def _alike(one: str, other: str) -> bool:
    if abs(len(one) - len(other)) > max(len(one), len(other)) * (1 - _FUZZY_RATIO):
        return False
    return SequenceMatcher(None, one, other, autojunk=False).ratio() >= _FUZZY_RATIO


def _pages(doc: LoadedDocument) -> list[tuple[int, int]]:
    ends = [*doc.page_starts[1:], len(doc.text)]
    return list(zip(doc.page_starts, ends[: len(doc.page_starts)], strict=True))


def _zones(
    text: str, start: int, end: int, blocks: list[tuple[int, int]]
) -> list[tuple[str, str, tuple[int, int]]]:
    """The page's first and last non-blank lines: (top or bottom, key, span). A page keeps
    at least one line outside its zones: one of two lines has no header nor footer. A
    picture's block is no line of the page's (a PDF's end its page; charts alike on every
    page say alike things)."""
    lines = [
        m.span()
        for m in _LINE.finditer(text, start, end)
        if text[m.start() : m.end()].strip()
        and not any(b_start < m.end() and m.start() < b_end for b_start, b_end in blocks)
    ]
    size = min(_ZONE_LINES, (len(lines) - 1) // 2)
    top, bottom = lines[:size], lines[len(lines) - size :] if size else []
    found = [("top", span) for span in top] + [("bottom", span) for span in bottom]
    return [(where, key, span) for where, span in found if (key := _furniture_key(text, span))]


def _furniture_key(text: str, span: tuple[int, int]) -> str:
    """The line as compared across pages (digits and spacing ignored), or "" when it
    cannot be furniture."""
    line = text[span[0] : span[1]].strip()
    if len(line) > _MAX_FURNITURE_CHARS or line.startswith("|"):
        return ""
    return _SPACES.sub(" ", _DIGITS.sub("#", line)).casefold()


def _holds_line(text: str, edit: Edit, line: str) -> bool:
    return any(" ".join(part.split()) == line for part in text[edit.start : edit.end].split("\n"))


def _line_removal(text: str, span: tuple[int, int]) -> Edit:
    """Remove the line with its line break: the one after it, else the one before."""
    start, end = span
    if end < len(text) and text[end] == "\n":
        return Edit(start, end + 1)
    return Edit(start - 1 if start and text[start - 1] == "\n" else start, end)


# -- hyphenation --------------------------------------------------------------------------


def _hyphenation(text: str) -> list[Edit]:
    """Edits joining the words hyphenated across line breaks (and giving PDFium's other
    line-end hyphens back their ``-``)."""
    breaks = list(_LINE_END_HYPHEN.finditer(text))
    joined = {found.start() for found in breaks}
    edits = [
        Edit(found.start(), found.end(), "-")
        for found in re.finditer(_PDFIUM_HYPHEN, text)
        if found.start() not in joined
    ]
    if not breaks:
        return edits
    compounds = {w.casefold() for w in _HYPHENATED_WORD.findall(text)}
    for found in breaks:
        head = _word_before(text, found.start())
        tail = _WORD_START.match(text, found.end())
        compound = tail is not None and f"{head}-{tail.group()}".casefold() in compounds
        edits.append(Edit(found.start(), found.end(), "-" if compound else ""))
    return edits


def _word_before(text: str, end: int) -> str:
    start = end
    while start > 0 and end - start < _MAX_WORD and _IS_LETTER.match(text, start - 1):
        start -= 1
    return text[start:end]


# -- whitespace ---------------------------------------------------------------------------


def _whitespace(text: str) -> list[Edit]:
    """Edits collapsing runs of spaces in a line, dropping spaces at line ends and making
    runs of blank lines one."""
    edits = [Edit(*m.span()) for m in _TRAILING_SPACES.finditer(text)]
    edits += [Edit(*m.span(), "\n\n") for m in _BLANK_RUN.finditer(text)]
    edits += [
        Edit(*m.span(), " ")
        for m in _INNER_SPACES.finditer(text)
        if not _line_of(text, m.start()).lstrip().startswith("|")
    ]
    return _disjoint(edits)


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : len(text) if end < 0 else end]


def _merged(deletions: list[Edit]) -> list[Edit]:
    """Overlapping deletions as one (two lines removed, the second taking the line break
    before it when it ends the text, share that break)."""
    merged: list[Edit] = []
    for edit in sorted(deletions, key=lambda e: e.start):
        if merged and edit.start <= merged[-1].end:
            merged[-1] = Edit(merged[-1].start, max(merged[-1].end, edit.end))
        else:
            merged.append(edit)
    return merged


def _disjoint(edits: list[Edit]) -> list[Edit]:
    """``edits`` in order, dropping any that overlaps one kept before it (trailing spaces
    at the start of a blank run are inside the run's edit)."""
    kept: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.start, -e.end)):
        if not kept or edit.start >= kept[-1].end:
            kept.append(edit)
    return kept
