"""HTML loader built on BeautifulSoup with the stdlib parser, rendering Markdown.

Page furniture (scripts, styles, navigation, footers) is dropped, and so are the
``Next: … Previous: … Up: …`` link bars of generated manuals (texinfo, DocBook);
headings become ``#`` lines, paragraphs and list items Markdown blocks, ``<pre>``
fenced code and tables Markdown tables.

Every piece of the text remembers the lines of the file it came from (the parser's
``sourceline``, then the newlines inside the element), so a chunk is cited at the
lines a reader finds it on when they open the ``.html`` file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.ingest.loaders.common import Limits, pick_title
from knowhub.ingest.loaders.encoding import decode_document
from knowhub.ingest.loaders.markdown import (
    escape_markdown,
    heading_title,
    markdown_headings,
    markdown_table_blocks,
)
from knowhub.models import LineSpan, LoadedDocument

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag

__all__ = ["load_html"]

_NOISE = ["script", "style", "noscript", "template", "nav", "footer", "head", "svg", "iframe"]
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_PARAGRAPHS = frozenset({"p", "dt", "dd", "figcaption", "summary", "caption", "address"})
_BLOCKS = frozenset(
    {
        *_HEADINGS,
        *_PARAGRAPHS,
        *("pre", "ul", "ol", "li", "table", "hr"),
        *("html", "body", "main", "article", "section", "div", "header", "aside", "blockquote"),
        *("figure", "details", "dl", "form", "fieldset"),
    }
)
_LISTS = ["ul", "ol"]
_CONTAINERS = _BLOCKS - {*_HEADINGS, *_PARAGRAPHS, *_LISTS, "li", "pre", "table", "hr"}
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_SNIFF_BYTES = 4096
# Link bars of generated manuals: texinfo 7 (div.nav-panel), DocBook (div.navheader …).
_NAV_CLASSES = frozenset(
    {"nav-panel", "navheader", "navfooter", "navigation", "breadcrumb", "breadcrumbs"}
)
# Texinfo 5-6 (div.header > p) and hand-made ones: "Next: <a>…</a>, Up: <a>…</a>".
_NAV_START = re.compile(r"\s*(?:next|previous|prev|up)\s*:", re.IGNORECASE)
_NAV_WORDS = frozenset({"next", "previous", "prev", "up", "contents", "index", "top", "home"})

_Part = tuple[str, int, int]
"""One or more lines of the text, with the first and last file line they came from."""
_Block = list[_Part]
"""Parts joined by a newline; blocks are joined by a blank line."""


def load_html(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an HTML page as Markdown text.

    Args:
        path: the file.
        data: its bytes; a BOM or ``<meta charset>`` gives the encoding.
        limits: ``max_chars`` bounds the decoded markup (the text is shorter).

    Returns:
        The document, titled by ``<title>``, else its first heading, else its stem;
        its ``line_map`` gives the file lines of each paragraph, item and code block.
    """
    from bs4 import BeautifulSoup

    declared = _META_CHARSET.search(data[:_SNIFF_BYTES])
    charset = declared[1].decode("ascii") if declared else None
    markup, warnings = decode_document(data, path, charset, max_chars=limits.max_chars)
    soup = BeautifulSoup(markup, "html.parser")
    page_title = soup.title.get_text() if soup.title is not None else None
    for noise in soup.find_all(_NOISE):
        noise.decompose()
    _drop_navigation(soup)
    _break_lines(soup)
    text, line_map = _join(_blocks(soup, 1))
    headings = markdown_headings(text)
    return LoadedDocument(
        text=text,
        title=pick_title(path, page_title, heading_title(headings)),
        format="html",
        headings=headings,
        line_map=line_map,
        warnings=warnings,
    )


def _drop_navigation(soup: BeautifulSoup) -> None:
    """Remove link bars: as chunks they match every query about the pages they name."""
    from bs4 import Tag

    stack: list[Tag] = [soup]
    while stack:  # top down, so that nothing inside a bar removed is looked at
        for child in list(stack.pop().children):
            if isinstance(child, Tag):
                if _is_navigation(child):
                    child.decompose()
                else:
                    stack.append(child)


def _is_navigation(tag: Tag) -> bool:
    if _NAV_CLASSES.intersection(tag.get("class") or ()) or tag.get("role") == "navigation":
        return True
    return tag.name in ("p", "div") and _is_link_bar(tag)


def _is_link_bar(tag: Tag) -> bool:
    """Whether ``tag`` reads ``Next: <a>…</a>, Up: <a>…</a>``: nav words and links only."""
    first = next((string for string in tag.strings if string.strip()), "")
    if not _NAV_START.match(first):
        return False  # cheap: most blocks fail here, before their whole text is read
    words = [
        word.casefold()
        for string in tag.strings
        if string.find_parent("a") is None  # the words outside the links
        for word in re.findall(r"\w+", string)
    ]
    return all(word in _NAV_WORDS for word in words)


def _break_lines(soup: BeautifulSoup) -> None:
    """Turn ``<br>`` into a newline, so get_text() does not glue the two lines together,
    unless the source breaks the line there too (then the file's lines stay counted)."""
    for line_break in soup.find_all("br"):
        following = line_break.next_sibling
        source_breaks = isinstance(following, str) and following.startswith("\n")
        line_break.replace_with("" if source_breaks else "\n")


def _join(blocks: Iterator[_Block]) -> tuple[str, tuple[LineSpan, ...]]:
    """The text (blocks separated by a blank line) and where each part of it came from."""
    texts: list[str] = []
    spans: list[LineSpan] = []
    offset = 0
    for block in blocks:
        parts = [part for part in block if part[0]]
        if not parts:
            continue
        if texts:
            texts.append("\n\n")
            offset += 2
        for index, (part, first, last) in enumerate(parts):
            if index:
                texts.append("\n")
                offset += 1
            spans.append(LineSpan(offset, first, last))
            texts.append(part)
            offset += len(part)
    return "".join(texts), tuple(spans)


def _lines(start: int | None, raw: str) -> tuple[int, int]:
    """The file lines of the non-blank text in ``raw``, which starts on line ``start``."""
    stripped = raw.lstrip()
    first = (start or 1) + raw.count("\n", 0, len(raw) - len(stripped))
    return first, first + stripped.rstrip().count("\n")


class _Inline:
    """Loose inline text between blocks, collected into one paragraph, and the file line
    the walk has reached (strings have no line of their own; elements do)."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.texts: list[str] = []
        self.span: tuple[int, int] | None = None

    def add(self, text: str, line: int | None = None) -> None:
        if line is not None:
            self.line = line
        if text.strip():
            first, last = _lines(self.line, text)
            self.span = (self.span[0] if self.span else first, last)
        self.texts.append(text)
        self.line += text.count("\n")

    def flush(self) -> _Block:
        text, span = _paragraph("".join(self.texts)), self.span
        self.texts, self.span = [], None
        return [(text, *span)] if text and span else []


def _blocks(container: Tag, line: int) -> Iterator[_Block]:
    """Markdown blocks for a container's children; loose inline text becomes paragraphs."""
    from bs4.element import NavigableString, PreformattedString, Tag

    inline = _Inline(line)
    for child in container.children:
        if isinstance(child, PreformattedString):  # comments, doctype, CDATA …
            inline.line += str(child).count("\n")
        elif isinstance(child, NavigableString):
            inline.add(str(child))
        elif isinstance(child, Tag) and child.name not in _BLOCKS:
            inline.add(child.get_text(), child.sourceline)
        elif isinstance(child, Tag):
            yield inline.flush()
            yield from _block(child)
            inline.line = (child.sourceline or inline.line) + child.get_text().count("\n")
    yield inline.flush()


def _block(tag: Tag) -> Iterator[_Block]:
    if tag.name in _CONTAINERS:
        yield from _blocks(tag, tag.sourceline or 1)
        return
    raw = tag.get_text()
    first, last = _lines(tag.sourceline, raw)
    if tag.name in _HEADINGS:
        yield [("#" * _HEADINGS[tag.name] + " " + _collapse(raw), first, last)]
    elif tag.name in _PARAGRAPHS:
        yield [(_paragraph(raw), first, last)]
    elif tag.name == "pre":
        opening = tag.sourceline or first
        # The closing tag is on the line the element's text ends on.
        yield _fenced(raw.strip("\n"), (opening, opening + raw.count("\n")), first, last)
    elif tag.name in _LISTS or tag.name == "li":
        yield list(_list_items(tag, depth=0))
    elif tag.name == "table":
        yield from _table(tag, first, last)


def _list_items(tag: Tag, depth: int) -> Iterator[_Part]:
    """``- item`` lines for a list (or a lone ``<li>``), nested lists indented."""
    from bs4 import Tag

    items = [tag] if tag.name == "li" else tag.find_all("li", recursive=False)
    for item in items:
        # Only the lists directly inside this item; deeper ones go with their own item.
        nested = [
            sub
            for sub in item.find_all(_LISTS)
            if isinstance(sub, Tag) and sub.find_parent("li") is item
        ]
        for sublist in nested:
            sublist.extract()
        raw = item.get_text()
        text = _collapse(raw)
        if text:
            yield ("  " * depth + "- " + escape_markdown(text), *_lines(item.sourceline, raw))
        for sublist in nested:
            yield from _list_items(sublist, depth + 1)


def _table(table: Tag, first: int, last: int) -> Iterator[_Block]:
    """A Markdown table per block of rows (see ``markdown_table``), at its rows' lines."""
    rows = [
        (row, [cell.get_text() for cell in row.find_all(("th", "td"), recursive=False)])
        for row in table.find_all("tr")
    ]
    kept = [(row, cells) for row, cells in rows if any(cell.strip() for cell in cells)]
    lines = [_lines(row.sourceline or first, row.get_text()) for row, _ in kept]
    for text, top, bottom in markdown_table_blocks([cells for _, cells in kept]):
        yield [(text, max(first, lines[top][0]), min(last, lines[bottom][1]))]


def _fenced(code: str, tags: tuple[int, int], first: int, last: int) -> _Block:
    """The code between fences; ``tags``: the lines of ``<pre>`` and ``</pre>``."""
    if not code.strip():
        return []
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return [(fence, tags[0], tags[0]), (code, first, last), (fence, tags[1], tags[1])]


def _paragraph(text: str) -> str:
    return escape_markdown(_collapse(text))


def _collapse(text: str) -> str:
    return " ".join(text.split())
