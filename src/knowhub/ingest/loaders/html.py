"""HTML loader built on BeautifulSoup with the stdlib parser, rendering Markdown.

Page furniture (scripts, styles, navigation, footers) is dropped; headings become
``#`` lines, paragraphs and list items Markdown blocks, ``<pre>`` fenced code and
tables Markdown tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.ingest.loaders.common import Limits, pick_title
from knowhub.ingest.loaders.encoding import decode_text
from knowhub.ingest.loaders.markdown import (
    escape_markdown,
    heading_title,
    markdown_headings,
    markdown_table,
)
from knowhub.models import LoadedDocument

if TYPE_CHECKING:
    from bs4 import Tag

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
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)
_SNIFF_BYTES = 4096


def load_html(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an HTML page as Markdown text.

    Args:
        path: the file.
        data: its bytes; a BOM or ``<meta charset>`` gives the encoding.
        limits: ``max_chars`` bounds the decoded markup (the text is shorter).

    Returns:
        The document, titled by ``<title>``, else its first heading, else its stem.
    """
    from bs4 import BeautifulSoup

    declared = _META_CHARSET.search(data[:_SNIFF_BYTES])
    charset = declared[1].decode("ascii") if declared else None
    markup = decode_text(data, path, charset, max_chars=limits.max_chars)
    soup = BeautifulSoup(markup, "html.parser")
    page_title = soup.title.get_text() if soup.title is not None else None
    for noise in soup.find_all(_NOISE):
        noise.decompose()
    for line_break in soup.find_all("br"):
        line_break.replace_with("\n")  # else get_text() glues the two lines together
    text = "\n\n".join(block for block in _blocks(soup) if block)
    headings = markdown_headings(text)
    return LoadedDocument(
        text=text,
        title=pick_title(path, page_title, heading_title(headings)),
        format="html",
        headings=headings,
    )


def _blocks(container: Tag) -> Iterator[str]:
    """Markdown blocks for a container's children; loose inline text becomes paragraphs."""
    from bs4.element import NavigableString, PreformattedString, Tag

    inline: list[str] = []
    for child in container.children:
        if isinstance(child, PreformattedString):  # comments, doctype, CDATA …
            continue
        if isinstance(child, NavigableString):
            inline.append(str(child))
        elif isinstance(child, Tag) and child.name not in _BLOCKS:
            inline.append(child.get_text())
        elif isinstance(child, Tag):
            yield _paragraph("".join(inline))
            inline = []
            yield from _block(child)
    yield _paragraph("".join(inline))


def _block(tag: Tag) -> Iterator[str]:
    if tag.name in _HEADINGS:
        yield "#" * _HEADINGS[tag.name] + " " + _collapse(tag.get_text())
    elif tag.name in _PARAGRAPHS:
        yield _paragraph(tag.get_text())
    elif tag.name == "pre":
        yield _fenced(tag.get_text())
    elif tag.name in _LISTS or tag.name == "li":
        yield "\n".join(_list_items(tag, depth=0))
    elif tag.name == "table":
        yield _table(tag)
    elif tag.name != "hr":
        yield from _blocks(tag)


def _list_items(tag: Tag, depth: int) -> Iterator[str]:
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
        text = _collapse(item.get_text())
        if text:
            yield "  " * depth + "- " + escape_markdown(text)
        for sublist in nested:
            yield from _list_items(sublist, depth + 1)


def _table(table: Tag) -> str:
    rows = [
        [cell.get_text() for cell in row.find_all(("th", "td"), recursive=False)]
        for row in table.find_all("tr")
    ]
    return markdown_table([row for row in rows if any(cell.strip() for cell in row)])


def _fenced(code: str) -> str:
    code = code.strip("\n")
    if not code.strip():
        return ""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def _paragraph(text: str) -> str:
    return escape_markdown(_collapse(text))


def _collapse(text: str) -> str:
    return " ".join(text.split())
