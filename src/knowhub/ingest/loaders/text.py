"""Loaders for plain-text formats: Markdown, MDX, reStructuredText and ``.txt``.

The text is kept exactly as decoded (newlines normalized), so chunk offsets and
line numbers point into the file as the user sees it; a ``.txt`` file's terminal
formatting (a man page's overstrikes) alone is removed, within its lines.
"""

from __future__ import annotations

from pathlib import Path

from knowhub.ingest.loaders.common import Limits, pick_title
from knowhub.ingest.loaders.compressed import format_suffix
from knowhub.ingest.loaders.encoding import decode_document
from knowhub.ingest.loaders.manpage import strip_terminal_formatting
from knowhub.ingest.loaders.markdown import (
    front_matter,
    front_matter_end,
    heading_title,
    markdown_headings,
)
from knowhub.ingest.loaders.plaintext import text_structure
from knowhub.ingest.loaders.rst import rst_headings
from knowhub.models import LoadedDocument

__all__ = ["load_markdown", "load_plain_text", "load_rst", "rst_headings"]


def load_markdown(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load Markdown or MDX; front matter keys go to ``metadata``, text stays whole (so
    lines are the file's), and the chunks start after the front matter.

    Args:
        path: the file; ``.mdx`` (``.mdx.gz``) gives format ``mdx``, anything else
            ``markdown``.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by front matter ``title``, else its headings, else its stem.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    headings = markdown_headings(text)
    metadata = front_matter(text)
    declared = metadata.get("title")
    return LoadedDocument(
        text=text,
        title=pick_title(
            path, declared if isinstance(declared, str) else None, heading_title(headings)
        ),
        format="mdx" if format_suffix(path.name) == ".mdx" else "markdown",
        headings=headings,
        metadata=metadata,
        # Its keys are metadata already; as a chunk it would only be noise that ranks.
        body_start=front_matter_end(text),
        warnings=warnings,
    )


def load_plain_text(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a ``.txt`` file, with the sections its layout shows (:mod:`.plaintext`).

    A man page saved with its terminal formatting (``man -Tutf8 tar > tar.txt``) is read
    without it: overstrikes and ANSI escapes are removed within their lines, so lines stay
    the file's lines though a chunk's text is what a terminal shows, not the raw bytes.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by the title its structure names (a man page's NAME line, an
        underlined title opening it), else its first line when that is obviously a title
        (see :func:`first_line_title`), else its stem.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars, overstruck=True)
    text = strip_terminal_formatting(text)
    structure = text_structure(text)
    return LoadedDocument(
        text=text,
        title=pick_title(path, structure.title),
        format="text",
        headings=structure.headings,
        body_start=structure.body_start,
        warnings=warnings,
    )


def load_rst(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load reStructuredText with the section titles as headings.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded text.

    Returns:
        The document, titled by its first section title, else its stem.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    headings = rst_headings(text)
    return LoadedDocument(
        text=text,
        title=pick_title(path, heading_title(headings)),
        format="rst",
        headings=headings,
        warnings=warnings,
    )
