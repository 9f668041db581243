"""Turn a file into text: one loader per format family, chosen by extension.

Each loader returns a :class:`~knowhub.models.LoadedDocument` whose ``text`` is
what gets chunked and cited. Formats without their own markup (docx, pptx, html,
tables, json) are rendered as Markdown so :func:`markdown_headings` finds their
sections. Heavy parsing libraries are imported only when a file needs them.
"""

from __future__ import annotations

from pathlib import Path

from knowhub.ingest.loaders.common import Loader, loader_error
from knowhub.ingest.loaders.docx import load_docx
from knowhub.ingest.loaders.html import load_html
from knowhub.ingest.loaders.jsonfile import load_json
from knowhub.ingest.loaders.markdown import markdown_headings
from knowhub.ingest.loaders.pdf import load_pdf
from knowhub.ingest.loaders.pptx import load_pptx
from knowhub.ingest.loaders.tables import load_csv, load_xlsx
from knowhub.ingest.loaders.text import load_markdown, load_plain_text, load_rst
from knowhub.models import LoadedDocument

__all__ = ["SUPPORTED_EXTENSIONS", "load", "markdown_headings"]

_LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".mdx": load_markdown,
    ".markdown": load_markdown,
    ".txt": load_plain_text,
    ".rst": load_rst,
    ".pdf": load_pdf,
    ".docx": load_docx,
    ".pptx": load_pptx,
    ".html": load_html,
    ".htm": load_html,
    ".csv": load_csv,
    ".xlsx": load_xlsx,
    ".json": load_json,
}

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(_LOADERS)
"""Lower-case file extensions, with the dot, that :func:`load` can read."""


def load(path: Path, data: bytes | None = None) -> LoadedDocument:
    """Extract the text, title, headings and pages of one file.

    Args:
        path: the file; its extension (case-insensitive) picks the loader.
        data: the file's bytes when the caller already read them (to hash them);
            ``None`` reads the file.

    Returns:
        The loaded document.

    Raises:
        LoaderError: the extension is unsupported, the file cannot be read, or it is
            corrupt, encrypted, binary or empty. The message starts with the path.
    """
    loader = _LOADERS.get(path.suffix.lower())
    if loader is None:
        raise loader_error(
            path,
            f"unsupported file type {path.suffix or '(no extension)'!r}: knowhub reads "
            f"{' '.join(sorted(SUPPORTED_EXTENSIONS))}; convert it or leave it out",
        )
    if data is None:
        data = _read(path)
    document = loader(path, data) if data.strip() else None
    if document is None or not document.text.strip():
        raise loader_error(path, "is empty (no text to index): add content or leave it out")
    return document


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise loader_error(
            path,
            f"cannot be read ({exc.strerror or exc}): check that it exists and that "
            "knowhub may read it",
        ) from exc
