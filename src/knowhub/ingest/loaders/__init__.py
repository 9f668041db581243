"""Turn a file into text: one loader per format family, chosen by extension.

Each loader returns a :class:`~knowhub.models.LoadedDocument` whose ``text`` is
what gets chunked and cited. Formats without their own markup (docx, pptx, html,
tables, json) are rendered as Markdown so :func:`markdown_headings` finds their
sections. Scanned PDF pages and image files are read by OCR, page by page
(:mod:`~knowhub.ingest.loaders.ocr`). A compressed file is read as its inner name says
(:mod:`~knowhub.ingest.loaders.compressed`). An archive's or a mailbox's members are
documents of their own (:func:`container_entries`); the ingest pipeline reads them one by
one. Heavy parsing libraries (and the OCR engine) are imported only when a file needs them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from knowhub.errors import UnsupportedFileError
from knowhub.ingest.loaders.archive import (
    ARCHIVE_EXTENSIONS,
    ArchiveLimits,
    Entry,
    archive_entries,
    is_archive,
)
from knowhub.ingest.loaders.common import (
    Limits,
    Loader,
    PagedLoader,
    PageProgress,
    loader_error,
    too_much_text,
)
from knowhub.ingest.loaders.compressed import (
    COMPRESSED_EXTENSIONS,
    SNIFF_BYTES,
    decompress,
    format_suffix,
    inner_reason,
    inner_suffix,
    is_compressed,
    text_check,
)
from knowhub.ingest.loaders.docx import load_docx
from knowhub.ingest.loaders.epub import load_epub
from knowhub.ingest.loaders.html import load_html
from knowhub.ingest.loaders.image import IMAGE_EXTENSIONS, load_image
from knowhub.ingest.loaders.jsonfile import load_json
from knowhub.ingest.loaders.mail import MAIL_EXTENSIONS, is_mail, load_eml, mail_entries
from knowhub.ingest.loaders.markdown import markdown_headings
from knowhub.ingest.loaders.notebook import load_notebook
from knowhub.ingest.loaders.ocr import OcrOptions
from knowhub.ingest.loaders.odf import load_odf
from knowhub.ingest.loaders.pdf import load_pdf
from knowhub.ingest.loaders.pptx import load_pptx
from knowhub.ingest.loaders.reading import open_regular
from knowhub.ingest.loaders.rtf import load_rtf
from knowhub.ingest.loaders.tables import load_csv, load_xlsx
from knowhub.ingest.loaders.text import load_markdown, load_plain_text, load_rst
from knowhub.models import LoadedDocument
from knowhub.surrogates import escape_surrogates, escape_surrogates_deep, replace_surrogates

__all__ = [
    "ARCHIVE_EXTENSIONS",
    "COMPRESSED_EXTENSIONS",
    "IMAGE_EXTENSIONS",
    "MAIL_EXTENSIONS",
    "READ_FORMATS",
    "SUPPORTED_EXTENSIONS",
    "ArchiveLimits",
    "Entry",
    "Limits",
    "OcrOptions",
    "PageProgress",
    "container_entries",
    "is_container",
    "load",
    "markdown_headings",
    "unsupported_reason",
]

_LOADERS: dict[str, Loader] = {
    ".md": load_markdown,
    ".mdx": load_markdown,
    ".markdown": load_markdown,
    ".txt": load_plain_text,
    ".rst": load_rst,
    ".docx": load_docx,
    ".pptx": load_pptx,
    ".html": load_html,
    ".htm": load_html,
    ".xhtml": load_html,
    ".csv": load_csv,
    ".xlsx": load_xlsx,
    ".json": load_json,
    ".epub": load_epub,
    ".odt": load_odf,
    ".ods": load_odf,
    ".odp": load_odf,
    ".rtf": load_rtf,
    ".ipynb": load_notebook,
    ".eml": load_eml,
}
# Loaders of pages that may need OCR: they report each page they read.
_PAGED_LOADERS: dict[str, PagedLoader] = {
    ".pdf": load_pdf,
    **dict.fromkeys(IMAGE_EXTENSIONS, load_image),
}

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(_LOADERS) | frozenset(_PAGED_LOADERS)
"""Lower-case file extensions, with the dot, of the formats :func:`load` reads (each also
compressed: :data:`COMPRESSED_EXTENSIONS`)."""

READ_FORMATS = (
    f"{' '.join(sorted(SUPPORTED_EXTENSIONS))}, each also compressed "
    f"({' '.join(sorted(COMPRESSED_EXTENSIONS))}: README.md.gz), text with no extension "
    f"(README), and the members of archives and mailboxes ({' '.join(ARCHIVE_EXTENSIONS)} "
    f"{' '.join(MAIL_EXTENSIONS)})"
)
"""What knowhub reads, as every message says it (``knowhub reads …``)."""


def unsupported_reason(name: str) -> str | None:
    """Why a file named ``name`` is not read, by its name alone; None when it is read (its
    content may still turn out unreadable, or, for a name that gives no format, not text)."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in SUPPORTED_EXTENSIONS or not suffix or is_container(name):
        return None
    if suffix in COMPRESSED_EXTENSIONS:
        return None if inner_suffix(name) in SUPPORTED_EXTENSIONS else inner_reason(name)
    return f"unsupported file type {suffix}"


def is_container(name: str) -> bool:
    """Whether a file named ``name`` holds documents of its own (an archive, a mailbox, a
    message's attachments): :func:`container_entries` lists them."""
    return is_archive(name) or is_mail(name)


def container_entries(path: Path, file: BinaryIO, limits: ArchiveLimits) -> Iterator[Entry]:
    """The members of the archive or mail file ``file`` (named ``path``), one at a time.

    Raises:
        LoaderError: it is corrupt, or over a limit that refuses it whole (the message
            names the setting); a member over its own limit comes as a failed entry.
    """
    if is_archive(path.name):
        return archive_entries(path, file, limits)
    return mail_entries(path, file, limits)


def _by_content(name: str) -> bool:
    """Whether ``name`` gives no format (``README``, ``NEWS.gz``, ``changelog.Debian.gz``):
    it is read as plain text when its start is UTF-8 text."""
    return format_suffix(name) not in SUPPORTED_EXTENSIONS and unsupported_reason(name) is None


def load(
    path: Path,
    data: bytes | None = None,
    limits: Limits | None = None,
    on_page: PageProgress | None = None,
) -> LoadedDocument:
    """Extract the text, title, headings and pages of one file.

    Args:
        path: the file; its extension (case-insensitive) picks the loader; a compressed
            file's (``.gz``, ``.bz2``, ``.xz``) inner one does. A name that gives no format
            (``README``, ``NEWS.gz``, ``changelog.Debian.gz``) is read as plain text when
            its first 8 kB are UTF-8 text.
        data: the file's bytes when the caller already read them (to hash them);
            ``None`` reads the file.
        limits: how large the file and its text may be, and whether scans are read by
            OCR (default: :class:`Limits`'s).
        on_page: told of each page OCR reads, as ``(page, pages)`` (a long scan takes
            a second or so a page).

    Returns:
        The document. Its strings are all valid Unicode: an undecodable byte of the file
        name shows as ``\\xNN`` in titles and messages, a lone surrogate in the text
        (a JSON ``"\\ud800"``) as U+FFFD.

    Raises:
        LoaderError: the extension is unsupported, the file cannot be read, is too
            large (or unpacks to more) or extracts to too much text, or it is corrupt,
            encrypted, binary or empty, or a scan OCR is off for or cannot read. The
            message starts with the path. :class:`UnsupportedFileError` for a name that
            gives no format on a file that is no UTF-8 text (a man page's roff source, a
            binary), or a compressed file of a format not read.
    """
    limits = limits or Limits()
    if is_archive(path.name) or path.name.lower().endswith(".mbox"):  # .eml: a message too
        raise loader_error(path, "is an archive or mailbox: its members are read, not it")
    packed = is_compressed(path.name)
    if packed and (reason := unsupported_reason(path.name)) is not None:
        raise UnsupportedFileError(f"{escape_surrogates(str(path))}: {reason}", reason)
    by_content = _by_content(path.name)
    loader = _loader(".txt" if by_content else format_suffix(path.name), on_page)
    if loader is None:
        raise loader_error(
            path,
            f"unsupported file type {path.suffix!r}: knowhub reads {READ_FORMATS}; convert "
            "it or leave it out",
        )
    if data is None:
        data = _read(path, limits)
    if by_content:  # read as text for want of a format: whether it is, its start says
        if packed:
            data = decompress(path, data, limits.max_bytes, lambda h: text_check(path, h, True))
        else:
            text_check(path, data[:SNIFF_BYTES], False)
    elif packed:
        data = decompress(path, data, limits.max_bytes)
    # Loaders only name the file (titles, messages): give them a name every sink can write.
    named = Path(escape_surrogates(str(path)))
    # isspace(), unlike strip(), makes no copy of a large file or text.
    document = loader(named, data, limits) if data and not data.isspace() else None
    if document is None or not document.text or document.text.isspace():
        raise loader_error(path, "is empty (no text to index): add content or leave it out")
    if len(document.text) > limits.max_chars:  # the loaders stop early; this is the backstop
        raise too_much_text(path, limits.max_chars)
    if packed and inner_suffix(path.name) in SUPPORTED_EXTENSIONS and document.title == named.stem:
        # Titled by its file name: README.md.gz is "README", as README.md would be.
        document = dataclasses.replace(document, title=PurePosixPath(named.stem).stem)
    return _valid_unicode(document)


def _loader(suffix: str, on_page: PageProgress | None) -> Loader | None:
    paged = _PAGED_LOADERS.get(suffix)
    if paged is None:
        return _LOADERS.get(suffix)

    def reporting(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
        return paged(path, data, limits, on_page)

    return reporting


def _read(path: Path, limits: Limits) -> bytes:
    try:
        with open_regular(path) as file:
            return file.read(limits.max_bytes)
    except OSError as exc:
        raise loader_error(
            path,
            f"cannot be read ({exc.strerror or exc}): check that it exists and that "
            "knowhub may read it",
        ) from exc


def _valid_unicode(document: LoadedDocument) -> LoadedDocument:
    """``document`` with no lone surrogate left, which SQLite and JSON would refuse.

    U+FFFD replaces one character with one, so headings and pages keep their offsets.
    """
    return dataclasses.replace(
        document,
        text=replace_surrogates(document.text),
        title=replace_surrogates(document.title),
        headings=tuple(
            dataclasses.replace(h, title=replace_surrogates(h.title)) for h in document.headings
        ),
        metadata=escape_surrogates_deep(document.metadata),
    )
