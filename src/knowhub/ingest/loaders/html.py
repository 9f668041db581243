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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.ingest.loaders.common import Limits, loader_error, pick_title
from knowhub.ingest.loaders.encoding import decode_document
from knowhub.ingest.loaders.html_anchors import anchored, heading_anchor
from knowhub.ingest.loaders.html_tree import MAX_DEPTH, TooDeepError, parse_html
from knowhub.ingest.loaders.markdown import (
    escape_markdown,
    heading_title,
    markdown_headings,
    markdown_table_blocks,
)
from knowhub.models import LineSpan, LoadedDocument

if TYPE_CHECKING:
    from bs4 import BeautifulSoup, Tag
    from bs4.element import PageElement

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
# Laid out apart from the text around them (blocks, rows, cells): where an element's text
# crosses one's edge, words are parted (a layout table's cells, a list item's paragraphs).
_APART = _BLOCKS | {"td", "th", "tr", "thead", "tbody", "tfoot", "center", "hgroup", "menu"}
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
_BAR_NODES = 200  # a link bar is a few links: a block of more nodes is not one (texinfo's: 20)
_BAR_START = 8  # nodes before its first words ("Next:"): texinfo's bar has 3 (div, blank, p)
_MAX_INDENT = 16  # levels of a nested list indented; deeper ones line up with the 16th
_CHECK_EVERY = 4096  # nodes walked between looks at the file's deadline

_Part = tuple[str, int, int]
"""One or more lines of the text, with the first and last file line they came from."""
_Block = list[_Part]
"""Parts joined by a newline; blocks are joined by a blank line."""


def load_html(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an HTML page as Markdown text.

    Args:
        path: the file.
        data: its bytes; a BOM or ``<meta charset>`` gives the encoding.
        limits: ``max_chars`` bounds the decoded markup (the text is shorter); the
            ``deadline`` is checked as the page is parsed and walked.

    Returns:
        The document, titled by ``<title>``, else its first heading, else its stem;
        its ``line_map`` gives the file lines of each paragraph, item and code block.

    Raises:
        LoaderError: the page nests elements deeper than a browser shows them nested
            (:data:`~knowhub.ingest.loaders.html_tree.MAX_DEPTH`), or its time is up.
    """
    declared = _META_CHARSET.search(data[:_SNIFF_BYTES])
    charset = declared[1].decode("ascii") if declared else None
    markup, warnings = decode_document(data, path, charset, max_chars=limits.max_chars)

    def check_time() -> None:
        limits.deadline.check(path, "while reading its HTML")

    try:
        soup = parse_html(markup, check_time)
    except TooDeepError as exc:
        raise loader_error(
            path,
            f"{exc}: no page meant for reading nests so deep (browsers stop nesting at "
            f"{MAX_DEPTH}); close its elements, or convert it to text",
        ) from exc
    page_title = soup.title.get_text() if soup.title is not None else None
    _remove(soup, lambda tag: tag.name in _NOISE)
    _remove(soup, _is_navigation)  # link bars: they match every query about their pages
    anchors: list[tuple[str, str]] = []
    text, line_map = _join(_blocks(soup, check_time, anchors))
    headings = anchored(markdown_headings(text), anchors)
    return LoadedDocument(
        text=text,
        title=pick_title(path, page_title, heading_title(headings)),
        format="html",
        headings=headings,
        line_map=line_map,
        warnings=warnings,
    )


def _remove(soup: BeautifulSoup, doomed: Callable[[Tag], bool]) -> None:
    """Remove the elements ``doomed`` picks, top down (nothing inside one removed is looked
    at), each at the cost of its own size: from the end of its parent's children, at an index
    known, where bs4 would look for it among all its siblings before it."""
    from bs4 import Tag

    parents: list[Tag] = [soup]
    while parents:
        children = parents.pop().contents
        for index in range(len(children) - 1, -1, -1):  # the indexes before stay right
            child = children[index]
            if not isinstance(child, Tag):
                continue
            if doomed(child):
                child.extract(_self_index=index)
                child.decompose()
            else:
                parents.append(child)


def _is_navigation(tag: Tag) -> bool:
    if _NAV_CLASSES.intersection(tag.get("class") or ()) or tag.get("role") == "navigation":
        return True
    return tag.name in ("p", "div") and _is_link_bar(tag)


def _is_link_bar(tag: Tag) -> bool:
    """Whether ``tag`` reads ``Next: <a>…</a>, Up: <a>…</a>``: nav words and links only.

    Only its first nodes are read: a bar is a few links, and a block reading all of its
    own would cost every block above it its size again."""
    first = next((s for s, _ in _leading_strings(tag, _BAR_START) if s and s.strip()), "")
    if not _NAV_START.match(first):
        return False  # cheap: most blocks fail here, a few nodes in
    words = []
    for string, in_link in _leading_strings(tag, _BAR_NODES):
        if string is None:
            return False  # longer than a bar
        if not in_link:  # the words outside the links
            words += [word.casefold() for word in re.findall(r"\w+", string)]
    return all(word in _NAV_WORDS for word in words)


def _leading_strings(tag: Tag, nodes: int) -> Iterator[tuple[str | None, bool]]:
    """The strings ``get_text()`` reads in ``tag``, each with whether it is inside a link,
    in document order, from its first ``nodes`` nodes; ``(None, False)`` after them when
    it has more."""
    from bs4.element import CData, NavigableString, Tag

    stack: list[tuple[Iterator[PageElement], bool]] = [(iter(tag.contents), False)]
    while stack:
        node = next(stack[-1][0], None)
        if node is None:
            stack.pop()
            continue
        nodes -= 1
        if nodes < 0:
            yield None, False
            return
        in_link = stack[-1][1]
        if isinstance(node, Tag):
            stack.append((iter(node.contents), in_link or node.name == "a"))
        elif type(node) in (NavigableString, CData):
            yield str(node), in_link


def _text(tag: Tag, lists: list[Tag] | None = None, *, edges: bool = False) -> str:
    """``tag.get_text()``, each ``<br>`` a line break (none where the source breaks the line
    there too, so that the file's lines stay counted), and a space where the text crosses
    the edge of an element laid out apart (:data:`_APART`) with none beside it (inline
    markup joins: ``<b>fo</b>o`` is "foo"); walked from a stack, no element changed. With
    ``lists``, the item ``tag``'s own nested lists (not those inside a deeper item) are left
    out of the text and added to ``lists``, in order. With ``edges``, such an edge at the
    start or end of the text (``tag``'s own, if laid out apart) is a space there too: the
    text is joined to its neighbours' (an inline element among a container's loose text)."""
    from bs4.element import CData, NavigableString, Tag

    if tag.name == "br":
        return _line_break(tag)
    words = _Words(edges)
    # None: the end of an element laid out apart.
    stack: list[tuple[PageElement | None, bool]] = (
        [(tag, False)] if edges else [(child, False) for child in reversed(tag.contents)]
    )
    while stack:
        node, in_item = stack.pop()
        if node is None:
            words.apart = True
        elif isinstance(node, Tag):
            if node.name == "br":
                words.add(_line_break(node))
            elif lists is not None and node.name in _LISTS and not in_item:
                lists.append(node)
                words.apart = True
            else:
                if node.name in _APART:
                    words.apart = True
                    stack.append((None, in_item))
                inner = in_item or node.name == "li"
                stack += [(child, inner) for child in reversed(node.contents)]
        elif type(node) in (NavigableString, CData):  # what get_text() reads
            words.add(str(node))
    return words.text()


class _Words:
    """Text pieces, parted by a space where an edge of an element laid out apart lies
    between two of them and neither has whitespace there; before the first piece and after
    the last only with ``edges`` (else the file lines of the text's start stay counted as
    the callers count them, and a ``<pre>``'s code is kept as it is)."""

    def __init__(self, edges: bool) -> None:
        self.texts: list[str] = []
        self.apart = False  # an edge passed since the last piece
        self.edges = edges

    def add(self, text: str) -> None:
        if not text:
            return
        if self.apart and self._spaceless_end() and not text[0].isspace():
            self.texts.append(" ")
        self.apart = False
        self.texts.append(text)

    def text(self) -> str:
        if self.edges and self.apart and self.texts and self._spaceless_end():
            self.texts.append(" ")
        return "".join(self.texts)

    def _spaceless_end(self) -> bool:
        """Whether the pieces so far end in no whitespace (none so far: with ``edges``)."""
        return not self.texts[-1][-1].isspace() if self.texts else self.edges


def _line_break(line_break: Tag) -> str:
    """A ``<br>``'s text, so that the lines it parts are not glued together."""
    following = line_break.next_sibling
    return "" if isinstance(following, str) and following.startswith("\n") else "\n"


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


@dataclass
class _Level:
    """A container being walked: its children left, its loose text, the newlines of its
    text so far (``get_text()``'s, which the file line after it is counted from)."""

    container: Tag
    children: Iterator[PageElement]
    inline: _Inline
    newlines: int = 0


def _blocks(
    root: Tag, check_time: Callable[[], None], anchors: list[tuple[str, str]]
) -> Iterator[_Block]:
    """Markdown blocks for the page, containers walked from an explicit stack (a page may
    nest deeper than Python recurses); each element's text is read once. Each heading's
    title and anchor (:func:`heading_anchor`) are added to ``anchors``."""
    from bs4.element import CData, NavigableString, PreformattedString, Tag

    levels = [_Level(root, iter(root.contents), _Inline(1))]
    walked = 0
    while levels:
        level = levels[-1]
        child = next(level.children, None)
        walked += 1
        if walked % _CHECK_EVERY == 0:
            check_time()
        if child is None:
            yield level.inline.flush()
            levels.pop()
            if levels:
                _after(levels[-1], level.container, level.newlines)
        elif isinstance(child, PreformattedString):  # comments, doctype, CDATA …
            level.inline.line += str(child).count("\n")
            level.newlines += str(child).count("\n") if type(child) is CData else 0
        elif isinstance(child, NavigableString):
            level.inline.add(str(child))
            level.newlines += child.count("\n") if type(child) is NavigableString else 0
        elif isinstance(child, Tag) and child.name not in _BLOCKS:
            text = _text(child, edges=True)
            level.inline.add(text, child.sourceline)
            level.newlines += text.count("\n")
        elif isinstance(child, Tag) and child.name in _CONTAINERS:
            yield level.inline.flush()
            levels.append(_Level(child, iter(child.contents), _Inline(child.sourceline or 1)))
        elif isinstance(child, Tag):
            yield level.inline.flush()
            raw = _text(child)
            if child.name in _HEADINGS:
                anchors.append((_collapse(raw), heading_anchor(child)))
            yield from _block(child, raw)
            _after(level, child, raw.count("\n"))


def _after(level: _Level, block: Tag, newlines: int) -> None:
    """The walk of ``level`` goes on after ``block``, whose text has ``newlines``."""
    level.inline.line = (block.sourceline or level.inline.line) + newlines
    level.newlines += newlines


def _block(tag: Tag, raw: str) -> Iterator[_Block]:
    """The blocks of an element that is not a container; ``raw`` is its text."""
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
        yield list(_list_items(tag))
    elif tag.name == "table":
        yield from _table(tag, first, last)


def _list_items(tag: Tag) -> Iterator[_Part]:
    """``- item`` lines for a list (or a lone ``<li>``), nested lists indented (at most
    :data:`_MAX_INDENT` levels: deeper ones line up with those)."""
    stack = [(item, 0) for item in reversed(_items(tag))]
    while stack:
        item, depth = stack.pop()
        nested: list[Tag] = []
        raw = _text(item, nested)
        text = _collapse(raw)
        if text:
            yield ("  " * depth + "- " + escape_markdown(text), *_lines(item.sourceline, raw))
        deeper = min(depth + 1, _MAX_INDENT)
        for sublist in reversed(nested):
            stack += [(sub, deeper) for sub in reversed(_items(sublist))]


def _items(tag: Tag) -> list[Tag]:
    """A list's items: the outermost ``<li>`` inside it, also those of a list placed
    straight in it (``<ul><li>a</li><ul><li>b</li></ul></ul>``, which browsers show)."""
    return [tag] if tag.name == "li" else _outermost(tag, "li", ())


def _outermost(tag: Tag, name: str, skip: tuple[str, ...]) -> list[Tag]:
    """The elements called ``name`` inside ``tag`` that no other one holds (none inside an
    element named in ``skip``), in document order."""
    from bs4 import Tag

    found: list[Tag] = []
    stack = [child for child in reversed(tag.contents) if isinstance(child, Tag)]
    while stack:
        node = stack.pop()
        if node.name == name:
            found.append(node)
        elif node.name not in skip:
            stack += [child for child in reversed(node.contents) if isinstance(child, Tag)]
    return found


def _table(table: Tag, first: int, last: int) -> Iterator[_Block]:
    """A Markdown table per block of rows (see ``markdown_table``), at its rows' lines.

    The table's own rows: a table inside a cell is that cell's text."""
    rows = [
        (row, [_text(cell) for cell in row.find_all(("th", "td"), recursive=False)])
        for row in _outermost(table, "tr", ("table",))
    ]
    kept = [(row, cells) for row, cells in rows if any(cell.strip() for cell in cells)]
    lines = [_lines(row.sourceline or first, _text(row)) for row, _ in kept]
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
