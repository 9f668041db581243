"""PDF loader built on pypdfium2 (PDFium): text page by page, with page offsets."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    first_line_title,
    is_placeholder_title,
    loader_error,
    pick_title,
)
from knowhub.ingest.loaders.encoding import normalize_newlines
from knowhub.models import LoadedDocument

__all__ = ["PAGE_SEPARATOR", "PDFIUM_LOCK", "load_pdf"]

PAGE_SEPARATOR = "\n\n"
# PDFium is not thread-safe, not even across documents (pypdfium2 docs, Python API,
# "Incompatibility with Threading"); the ingest pipeline may load files from several
# threads, so every PDFium call is serialized, and every handle closed inside the lock.
PDFIUM_LOCK = threading.Lock()


def load_pdf(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a PDF: pages joined by a blank line, ``page_starts`` marking each page.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the text; pages past it are not extracted.

    Returns:
        The document, titled by the PDF's Title property (unless a tool's placeholder,
        such as ``untitled``), else its first line when that is obviously a title, else
        its stem.

    Raises:
        LoaderError: the PDF is password-protected, unreadable, has no text layer, or
            holds more text than the limit.
    """
    pages, properties = _read_pdf(path, data, CharBudget(path, limits))
    if not any(pages):
        raise loader_error(
            path,
            "has no extractable text (scanned images?): run OCR first "
            "(e.g. `ocrmypdf in.pdf out.pdf`) and ingest the result",
        )
    starts: list[int] = []
    offset = 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    metadata: dict[str, Any] = {"pages": len(pages)}
    if properties.get("Author"):
        metadata["author"] = properties["Author"]
    text = PAGE_SEPARATOR.join(pages)
    declared = properties.get("Title")
    return LoadedDocument(
        text=text,
        title=pick_title(
            path, None if is_placeholder_title(declared) else declared, first_line_title(text)
        ),
        format="pdf",
        page_starts=tuple(starts),
        metadata=metadata,
        line_map=None,  # a PDF has pages, not lines: cited by page
    )


def _read_pdf(path: Path, data: bytes, budget: CharBudget) -> tuple[list[str], dict[str, str]]:
    """Each page's text (stripped) and the document properties (Title, Author …)."""
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if exc.err_code == pdfium.raw.FPDF_ERR_PASSWORD:
                raise loader_error(
                    path, "is password-protected: decrypt it first (e.g. `qpdf --decrypt`)"
                ) from exc
            raise _unreadable(path) from exc
        try:
            pages = [budget.spend(_page_text(pdf[index])) for index in range(len(pdf))]
            properties: dict[str, str] = pdf.get_metadata_dict(skip_empty=True)
        except pdfium.PdfiumError as exc:
            raise _unreadable(path) from exc
        finally:
            pdf.close()
    return pages, properties


def _page_text(page: Any) -> str:
    textpage = page.get_textpage()
    try:
        # get_text_bounded, unlike get_text_range, is not limited to UCS-2.
        return normalize_newlines(textpage.get_text_bounded()).strip()
    finally:
        textpage.close()
        page.close()


def _unreadable(path: Path) -> LoaderError:
    return loader_error(
        path, "is not a readable PDF (corrupt or truncated): re-export or re-download it"
    )
