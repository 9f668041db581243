"""Word (.docx) loader built on python-docx, rendering the body as Markdown.

Headings become ``#`` lines, list paragraphs ``- `` lines and tables Markdown
tables, all in body order, so :func:`markdown_headings` finds the sections.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    check_office_file,
    join_blocks,
    not_office_file,
    pick_title,
)
from knowhub.ingest.loaders.figures import Figures
from knowhub.ingest.loaders.markdown import (
    escape_markdown,
    heading_title,
    markdown_headings,
    markdown_table,
)
from knowhub.ingest.loaders.ocr import Ocr
from knowhub.models import LoadedDocument

if TYPE_CHECKING:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

__all__ = ["load_docx"]

_HEADING_STYLE = re.compile(r"Heading ([1-9])")
_MAX_MARKDOWN_LEVEL = 6


def load_docx(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a .docx file as Markdown text.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_bytes`` bounds the unpacked parts, ``max_chars`` the text.

    Returns:
        The document, titled by its Title property, else its first heading, else its stem.

    Raises:
        LoaderError: the file is encrypted, not a valid .docx, or over a limit.
    """
    check_office_file(path, data, ".docx", limits)
    from docx import Document
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, SyntaxError, zipfile.BadZipFile) as exc:
        # lxml's XMLSyntaxError derives from SyntaxError.
        raise not_office_file(path, ".docx", exc) from exc
    budget = CharBudget(path, limits)
    figures = Figures(path, limits.images, Ocr(limits.ocr, limits.deadline))
    blocks = (block for item in document.iter_inner_content() for block in _blocks(item, figures))
    text = join_blocks(blocks, budget)
    headings = markdown_headings(text)
    properties = document.core_properties
    metadata: dict[str, Any] = {"author": properties.author} if properties.author else {}
    return LoadedDocument(
        text=text,
        title=pick_title(path, properties.title, heading_title(headings)),
        format="docx",
        headings=headings,
        metadata=metadata,
        line_map=None,  # Word has no lines to go to: cited by section
        warnings=figures.notes(),
        images=figures.images(text),
    )


def _blocks(item: Paragraph | Table, figures: Figures) -> Iterator[tuple[str, bool]]:
    """The Markdown for one body item, whether it is a list item, then a block for each
    picture drawn in it."""
    from docx.table import Table

    yield _block(item)
    if isinstance(item, Table) or not item._p.xpath(".//a:blip"):
        return
    for drawing in item._p.xpath(".//w:drawing"):
        alt = " ".join(drawing.xpath(".//wp:docPr/@descr"))
        for embed in drawing.xpath(".//a:blip/@r:embed"):
            part = item.part.related_parts.get(embed)
            blob = getattr(part, "blob", None)
            if isinstance(blob, bytes):
                yield figures.add(blob, None, alt), False


def _block(item: Paragraph | Table) -> tuple[str, bool]:
    """The Markdown for one body item, and whether it is a list item."""
    from docx.table import Table

    if isinstance(item, Table):
        return markdown_table([_row_texts(row) for row in item.rows]), False
    text = item.text.strip()
    if not text:
        return "", False
    style = item.style.name if item.style is not None else ""
    level = _heading_level(style or "")
    if level:
        return "#" * level + " " + " ".join(text.split()), False
    # python-docx has no public API for list membership: numbering lives in w:numPr.
    list_levels = item._p.xpath("./w:pPr/w:numPr/w:ilvl/@w:val")
    if list_levels or (style or "").startswith("List"):
        indent = "  " * int(list_levels[0]) if list_levels else ""
        return f"{indent}- {' '.join(text.split())}", True
    return escape_markdown(text), False


def _row_texts(row: Any) -> list[str]:
    """The row's cell texts, a merged cell's once: python-docx gives a cell spanning three
    columns three times, which made a merged title row look like a full header row."""
    texts, previous = [], None
    for cell in row.cells:
        texts.append("" if cell._tc is previous else cell.text)
        previous = cell._tc
    return texts


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = _HEADING_STYLE.fullmatch(style)
    return min(int(match[1]), _MAX_MARKDOWN_LEVEL) if match else 0
