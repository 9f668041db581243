"""OpenDocument loader (``.odt``, ``.ods``, ``.odp``): content.xml read with the standard
library, rendered as Markdown as the Office loaders render theirs.

A text document's headings (``text:h`` with their outline level) become ``#`` lines, its
lists ``- `` lines and its tables Markdown tables; a spreadsheet is a ``# <sheet>`` section
of tables per sheet, as an ``.xlsx`` is; a presentation a page per slide, as a ``.pptx`` is.
The body's kind, not the extension, decides which (an ``.odt`` that holds a spreadsheet is
read as one). Generated indexes (a table of contents) are left out: they repeat the
headings and would match every query about them. Pictures are passed over; their text
boxes are read. meta.xml gives the title, author and language.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from knowhub.ingest.loaders.common import CharBudget, Limits, join_blocks, pick_title
from knowhub.ingest.loaders.compressed import format_suffix
from knowhub.ingest.loaders.markdown import (
    escape_markdown,
    heading_title,
    markdown_headings,
    markdown_table,
)
from knowhub.ingest.loaders.pptx import slide_pages
from knowhub.ingest.loaders.tables import sheets_document
from knowhub.ingest.loaders.zipxml import Package
from knowhub.models import LoadedDocument

__all__ = ["load_odf"]

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
    "manifest": "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0",
}


def _q(name: str) -> str:
    """``text:p`` as ElementTree names it: ``{urn:…:text:1.0}p``."""
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_H, _P, _LIST, _ITEM, _HEADER = map(
    _q, ["text:h", "text:p", "text:list", "text:list-item", "text:list-header"]
)
_TABLE, _ROW, _CELL, _COVERED = map(
    _q, ["table:table", "table:table-row", "table:table-cell", "table:covered-table-cell"]
)
_FRAME, _TEXT_BOX, _PAGE = map(_q, ["draw:frame", "draw:text-box", "draw:page"])
_NOTES = _q("presentation:notes")
_GROUP = _q("draw:g")
_DRAW = f"{{{_NS['draw']}}}"
_CLASS = _q("presentation:class")
_BODY_KINDS = {_q("office:text"): "odt", _q("office:spreadsheet"): "ods"}
_BODY_KINDS |= {_q("office:presentation"): "odp", _q("office:drawing"): "odp"}
# Wrappers of a table's rows (header rows, row groups) are walked into; anything else in
# a table (columns, forms, shapes) holds no cell text.
_ROW_GROUPS = frozenset(
    map(_q, ["table:table-header-rows", "table:table-row-group", "table:table-rows"])
)
# Text no reader reads as the document's: generated indexes (they repeat the headings),
# comments, deleted text kept for change tracking, declarations.
_SKIPPED = frozenset(
    _q(name)
    for name in (
        "text:table-of-content",
        "text:alphabetical-index",
        "text:illustration-index",
        "text:table-index",
        "text:object-index",
        "text:user-index",
        "text:bibliography",
        "text:tracked-changes",
        "text:sequence-decls",
        "text:variable-decls",
        "text:user-field-decls",
        "office:annotation",
        "office:forms",
        "text:note-citation",
    )
)
_INLINE_BREAKS = {_q("text:line-break"): "\n", _q("text:tab"): " ", _q("text:s"): " "}
_NOTE_BODY = _q("text:note-body")
_FURNITURE = frozenset({"page-number", "footer", "header", "date-time", "page"})
_MAX_LEVEL = 6


def load_odf(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load an OpenDocument text, spreadsheet or presentation as Markdown text.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_bytes`` bounds the unpacked parts, ``max_chars`` the text.

    Returns:
        The document, titled by meta.xml's title, else its first heading (slide title),
        else its stem; format ``odt``, ``ods`` or ``odp`` as its body is.

    Raises:
        LoaderError: the file is encrypted, no valid OpenDocument file, or over a limit.
    """
    extension = format_suffix(path.name)
    package = Package(path, data, extension, limits)
    try:
        if _encrypted(package):
            raise package.encrypted()
        content = package.xml("content.xml")
        meta = package.xml("meta.xml")
    finally:
        package.close()
    body = _body(content)
    if content is None or body is None:
        raise package.invalid("no content.xml with a text, spreadsheet or presentation")
    kind = _BODY_KINDS[body.tag]
    properties = _properties(meta)
    reader = _Reader(_paragraph_styles(content), CharBudget(path, limits))
    title = properties.pop("title", None)
    if kind == "ods":
        sheets = [(_attr(t, "table:name"), reader.rows(t)) for t in body if t.tag == _TABLE]
        document = sheets_document(path, "ods", sheets, pick_title(path, title))
        return dataclasses.replace(document, metadata={**document.metadata, **properties})
    if kind == "odp":
        return _presentation(path, body, reader, title, properties)
    text = reader.text(body)
    headings = markdown_headings(text)
    return LoadedDocument(
        text=text,
        title=pick_title(path, title, heading_title(headings)),
        format="odt",
        headings=headings,
        metadata=properties,
        line_map=None,  # no lines to go to: cited by section
    )


def _body(content: Element | None) -> Element | None:
    """content.xml's text, spreadsheet or presentation element."""
    body = content.find(_q("office:body")) if content is not None else None
    if body is None:
        return None
    return next((child for child in body if child.tag in _BODY_KINDS), None)


def _presentation(
    path: Path, body: Element, reader: _Reader, title: str | None, properties: dict[str, Any]
) -> LoadedDocument:
    """A page per slide, titled by its title frame (``Slide N`` when it has none)."""
    slides = [reader.slide(page) for page in body if page.tag == _PAGE]
    text, starts = slide_pages(slides)
    first_title = next((title for title, _ in slides if title), None)
    return LoadedDocument(
        text=text,
        title=pick_title(path, title, first_title),
        format="odp",
        headings=markdown_headings(text),
        page_starts=starts,
        metadata={"slides": len(slides), **properties},
        line_map=None,  # cited by slide
    )


class _Reader:
    """Renders the elements of one document, counting its text against its budget.

    The tree is at most :data:`~knowhub.ingest.loaders.zipxml.XML_DEPTH` deep, so the
    walks recurse."""

    def __init__(self, styles: dict[str, str], budget: CharBudget) -> None:
        self.styles = styles
        self.budget = budget

    def text(self, container: Element) -> str:
        """A container's blocks joined: blank lines between, list items line by line."""
        return join_blocks(self.blocks(container, 0), self.budget)

    def slide(self, page: Element) -> tuple[str, list[str]]:
        """A slide's title (``""`` if none) and its body blocks."""
        title = ""
        body: list[str] = []
        for frame in _frames(page):
            role = frame.get(_CLASS, "")
            if role == "title" and not title:
                title = self.budget.spend(" ".join(_inline(frame).split()))
            elif role not in _FURNITURE:
                body.append(self.text(frame))
        notes = page.find(_NOTES)
        frames = _frames(notes) if notes is not None else iter(())
        text = "\n".join(self.text(f) for f in frames if f.get(_CLASS) == "notes").strip()
        if text:
            body.append(f"Notes:\n{text}")
        return title, [block for block in body if block]

    def blocks(self, container: Element, depth: int) -> Iterator[tuple[str, bool]]:
        """The Markdown blocks of a text container (a body, a section, a frame, a cell),
        each with whether it is a list item, in document order."""
        for child in container:
            tag = child.tag
            if tag in _SKIPPED:
                continue
            if tag == _H:
                yield _heading(child), False
            elif tag == _P:
                yield _paragraph(child, self.styles), False
            elif tag == _LIST:
                yield from ((item, True) for item in _list_items(child, depth))
            elif tag == _TABLE:
                yield markdown_table(self.rows(child)), False
            else:  # sections, frames, text boxes, shapes: their paragraphs are the text
                yield from self.blocks(child, depth)

    def rows(self, table: Element) -> list[list[str]]:
        """A table's rows of cell texts, repeated rows and cells expanded where they hold
        text.

        A spreadsheet declares its empty area as repeated empty rows and cells (LibreOffice
        writes a million rows of 16,384 cells after the last value): those are never made,
        and the empty cells between two values, and the repeats of a filled row or cell,
        count against the budget before they are made, one character each at least."""
        rows: list[list[str]] = []
        for row in _table_rows(table):
            cells = self.cells(row)
            if not cells:
                continue
            repeat = _repeat(row, "table:number-rows-repeated")
            self.budget.count(repeat * sum(len(cell) or 1 for cell in cells))
            rows += [cells] * repeat
        return rows

    def cells(self, row: Element) -> list[str]:
        """A row's cell texts up to its last filled one; ``[]`` for a row with none."""
        cells: list[str] = []
        empty = 0  # empty cells since the last filled one, not made yet
        for cell in row:
            if cell.tag not in (_CELL, _COVERED):
                continue
            repeat = _repeat(cell, "table:number-columns-repeated")
            text = _cell_text(cell)
            if not text:
                empty += repeat
                continue
            self.budget.count(empty + repeat)
            cells += [""] * empty + [text] * repeat
            empty = 0
        return cells


def _frames(page: Element) -> Iterator[Element]:
    """The frames and shapes holding a slide's text, in order, groups walked into (the
    notes' frames are not the slide's)."""
    for child in page:
        if child.tag == _GROUP:
            yield from _frames(child)
        elif child.tag != _NOTES and child.tag.startswith(_DRAW):
            yield child


def _heading(element: Element) -> str:
    text = " ".join(_inline(element).split())
    if not text:
        return ""
    try:
        level = int(element.get(_q("text:outline-level"), "1"))
    except ValueError:
        level = 1
    return "#" * min(max(level, 1), _MAX_LEVEL) + " " + text


def _paragraph(element: Element, styles: dict[str, str]) -> str:
    """A paragraph's Markdown: a ``#`` line when its style is the document's Title, as a
    Word document's Title paragraph is, else escaped text."""
    text = _inline(element).strip()
    if not text:
        return ""
    style = element.get(_q("text:style-name"), "")
    if styles.get(style, style) == "Title":
        return "# " + " ".join(text.split())
    return escape_markdown("\n".join(" ".join(line.split()) for line in text.split("\n")))


def _list_items(element: Element, depth: int) -> Iterator[str]:
    """``- item`` lines for a list, nested lists indented."""
    for item in element:
        if item.tag not in (_ITEM, _HEADER):
            continue
        texts: list[str] = []
        nested: list[Element] = []
        for child in item:
            if child.tag == _LIST:
                nested.append(child)
            elif child.tag not in _SKIPPED:
                texts.append(_inline(child))
        text = " ".join(" ".join(texts).split())
        if text:
            yield "  " * depth + "- " + escape_markdown(text)
        for sublist in nested:
            yield from _list_items(sublist, min(depth + 1, 16))


def _inline(element: Element) -> str:
    """The text of a paragraph (or any element), spans joined, ``text:s`` a space,
    ``text:line-break`` a newline; a footnote's text in brackets where it is cited."""
    parts = [element.text or ""]
    for child in element:
        if child.tag in _INLINE_BREAKS:
            parts.append(_INLINE_BREAKS[child.tag])
        elif child.tag == _q("text:note"):
            body = child.find(_NOTE_BODY)
            note = " ".join(_inline(body).split()) if body is not None else ""
            parts.append(f" [{note}]" if note else "")
        elif child.tag not in _SKIPPED:
            parts.append(_inline(child))
            if child.tag in (_P, _H):
                parts.append(" ")  # paragraphs of a text box or a cell are parted
        parts.append(child.tail or "")
    return "".join(parts)


def _table_rows(table: Element) -> Iterator[Element]:
    for child in table:
        if child.tag == _ROW:
            yield child
        elif child.tag in _ROW_GROUPS:
            yield from _table_rows(child)


def _cell_text(cell: Element) -> str:
    """What a cell shows: its paragraphs, else its value (a number or date written without
    a text of its own)."""
    paragraphs = [" ".join(_inline(p).split()) for p in cell if p.tag in (_P, _H, _LIST)]
    text = " ".join(p for p in paragraphs if p)
    if text:
        return text
    for name in ("office:value", "office:date-value", "office:time-value", "office:string-value"):
        value = cell.get(_q(name))
        if value:
            return value
    return ""


def _repeat(element: Element, attribute: str) -> int:
    try:
        return max(1, int(element.get(_q(attribute), "1")))
    except ValueError:
        return 1


def _attr(element: Element, name: str) -> str:
    return element.get(_q(name), "")


def _paragraph_styles(content: Element) -> dict[str, str]:
    """Automatic paragraph styles by name, each to the style it is based on: LibreOffice
    gives a Title paragraph it formatted by hand a style ``P1`` whose parent is ``Title``."""
    styles: dict[str, str] = {}
    automatic = content.find(_q("office:automatic-styles"))
    for style in automatic if automatic is not None else []:
        parent = style.get(_q("style:parent-style-name"))
        name = style.get(_q("style:name"))
        if name and parent:
            styles[name] = parent
    return styles


def _properties(meta: Element | None) -> dict[str, Any]:
    """meta.xml's title, author (its creator, else its initial creator) and language."""
    found = meta.find(_q("office:meta")) if meta is not None else None
    if found is None:
        return {}

    def value(*names: str) -> str | None:
        for name in names:
            element = found.find(_q(name))
            if element is not None and (element.text or "").strip():
                return " ".join((element.text or "").split())
        return None

    properties = {
        "title": value("dc:title"),
        "author": value("dc:creator", "meta:initial-creator"),
        "language": value("dc:language"),
    }
    return {key: item for key, item in properties.items() if item}


def _encrypted(package: Package) -> bool:
    """Whether the manifest marks content.xml as encrypted (a password-protected file, whose
    content.xml is ciphertext, not XML)."""
    manifest = package.xml("META-INF/manifest.xml")
    if manifest is None:
        return False
    for entry in manifest.iter(_q("manifest:file-entry")):
        if entry.get(_q("manifest:full-path")) == "content.xml":
            return entry.find(_q("manifest:encryption-data")) is not None
    return False
