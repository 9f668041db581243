"""PowerPoint (.pptx) loader built on python-pptx: one page per slide.

Each slide starts with a ``# <title>`` line (``# Slide N`` when it has none),
then its text frames, tables as Markdown tables, and speaker notes under ``Notes:``.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    check_office_file,
    not_office_file,
    pick_title,
)
from knowhub.ingest.loaders.figures import Figures
from knowhub.ingest.loaders.markdown import escape_markdown, markdown_headings, markdown_table
from knowhub.ingest.loaders.ocr import Ocr
from knowhub.models import LoadedDocument

__all__ = ["load_pptx", "slide_pages"]

SLIDE_SEPARATOR = "\n\n"


def load_pptx(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a .pptx file, one page per slide.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_bytes`` bounds the unpacked parts, ``max_chars`` the text.

    Returns:
        The document, titled by its Title property, else the first slide title, else
        its stem; ``text`` is empty when no slide holds any text.

    Raises:
        LoaderError: the file is encrypted, not a valid .pptx, or over a limit.
    """
    check_office_file(path, data, ".pptx", limits)
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    try:
        presentation = Presentation(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, SyntaxError, zipfile.BadZipFile) as exc:
        # lxml's XMLSyntaxError derives from SyntaxError.
        raise not_office_file(path, ".pptx", exc) from exc
    budget = CharBudget(path, limits)
    figures = Figures(path, limits.images, Ocr(limits.ocr, limits.deadline))
    slides = [
        _slide(slide, budget, _Pictures(figures, number))
        for number, slide in enumerate(presentation.slides, start=1)
    ]
    text, starts = slide_pages(slides)
    properties = presentation.core_properties
    metadata: dict[str, Any] = {"slides": len(presentation.slides)}
    if properties.author:
        metadata["author"] = properties.author
    first_title = next((title for title, _ in slides if title), None)
    return LoadedDocument(
        text=text,
        title=pick_title(path, properties.title, first_title),
        format="pptx",
        headings=markdown_headings(text),
        page_starts=starts,
        metadata=metadata,
        line_map=None,  # cited by slide
        warnings=figures.notes(),
        images=figures.images(text),
    )


def slide_pages(slides: Sequence[tuple[str, list[str]]]) -> tuple[str, tuple[int, ...]]:
    """The text of a deck, a page per slide (``# <title>``, ``# Slide N`` when it has none,
    then its blocks), and where each page starts; ``""`` when no slide holds any text.

    Args:
        slides: each slide's title (``""`` if none) and body blocks, in order.
    """
    if not any(title or body for title, body in slides):
        return "", ()  # only generated "Slide N" lines: let the caller report it empty
    pages = [
        "\n\n".join([f"# {title or f'Slide {number}'}", *body])
        for number, (title, body) in enumerate(slides, start=1)
    ]
    starts: list[int] = []
    offset = 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(SLIDE_SEPARATOR)
    return SLIDE_SEPARATOR.join(pages), tuple(starts)


@dataclass(frozen=True)
class _Pictures:
    """Where a slide's pictures go: the document's figures, told the slide's number."""

    figures: Figures
    slide: int

    def add(self, shape: Any) -> str:
        try:
            blob = shape.image.blob
        except (AttributeError, KeyError, ValueError):  # a linked picture, an empty placeholder
            return ""
        alt = shape._element.xpath("./*[1]/p:cNvPr/@descr")
        return self.figures.add(blob, self.slide, " ".join(alt))


def _slide(slide: Any, budget: CharBudget, pictures: _Pictures) -> tuple[str, list[str]]:
    """A slide's title (``""`` if none) and its body blocks, counted against ``budget``."""
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    skip = title_shape.shape_id if title_shape is not None else None
    blocks = _shape_blocks(slide.shapes, skip, pictures)
    body = [budget.spend(block) for block in blocks if block]
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = _frame_text(frame) if frame is not None else ""
        if notes:
            body.append(budget.spend(f"Notes:\n{notes}"))
    return title, body


def _shape_blocks(shapes: Iterable[Any], skip: int | None, pictures: _Pictures) -> Iterator[str]:
    """Text of each shape in slide order (a picture's block), descending into groups."""
    from pptx.shapes.group import GroupShape
    from pptx.shapes.picture import Picture

    for shape in shapes:
        if shape.shape_id == skip:
            continue
        if isinstance(shape, GroupShape):
            yield from _shape_blocks(shape.shapes, skip, pictures)
        elif isinstance(shape, Picture):  # a placeholder filled with a picture is one too
            yield pictures.add(shape)
        elif shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            yield markdown_table(rows)
        elif shape.has_text_frame:
            yield _frame_text(shape.text_frame)


def _frame_text(frame: Any) -> str:
    # python-pptx returns a line break inside a paragraph as a vertical tab.
    lines = (paragraph.text.replace("\v", "\n").strip() for paragraph in frame.paragraphs)
    return escape_markdown("\n".join(line for line in lines if line))
