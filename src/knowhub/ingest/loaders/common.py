"""Helpers shared by the format loaders: limits, error messages, titles, Office containers."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from knowhub.errors import LoaderError, OcrUnavailableError
from knowhub.ingest.loaders.budget import Deadline, over_time
from knowhub.ingest.loaders.figures import ImageOptions
from knowhub.ingest.loaders.ocr import OcrOptions
from knowhub.models import LoadedDocument
from knowhub.surrogates import escape_surrogates

__all__ = [
    "CharBudget",
    "Limits",
    "Loader",
    "PageProgress",
    "PagedLoader",
    "check_office_file",
    "file_too_large",
    "first_line_title",
    "is_placeholder_title",
    "join_blocks",
    "loader_error",
    "not_office_file",
    "ocr_unavailable",
    "pick_title",
    "too_much_text",
]


@dataclass(frozen=True)
class Limits:
    """How much one file may cost, and whether scans are read: the defaults are those of
    ``ingest.max_file_bytes``, ``ingest.max_extracted_chars`` and ``ingest.ocr*``.

    Attributes:
        max_bytes: the most a file may hold, and an Office file may unpack to.
        max_chars: the most text a file may extract to; extraction stops past it.
        ocr: OCR of scanned PDF pages and images: on or off, languages, dpi, pixels.
        images: pictures inside documents: where they are kept (none: not extracted), how
            they are described.
        deadline: when reading the file must stop (``ingest.max_seconds_per_file``, set
            per file); the default never passes.
    """

    max_bytes: int = 200_000_000
    max_chars: int = 50_000_000
    ocr: OcrOptions = field(default_factory=OcrOptions)
    images: ImageOptions = field(default_factory=ImageOptions)
    deadline: Deadline = field(default_factory=Deadline)


Loader = Callable[[Path, bytes, Limits], LoadedDocument]
"""A format loader: the file's path (for messages and titles), its bytes, the limits."""

PageProgress = Callable[[int, int], None]
"""Called as ``on_page(page, pages)`` after each page OCR read (1-based, of the file's)."""

PagedLoader = Callable[[Path, bytes, Limits, PageProgress | None], LoadedDocument]
"""A loader of pages that may need OCR (PDF, images), told of each page it reads."""

# Office XML compresses 5-30x; an entry packed much tighter is built to unpack (a zip
# bomb), and parsing it costs far more memory than its size suggests.
_MAX_RATIO = 100
_RATIO_FLOOR = 1 << 20  # small entries may be as repetitive as they like

# Encrypted OOXML files are not zips: Office wraps them in an OLE compound file,
# the same container as the legacy binary .doc/.ppt/.xls formats.
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_XML_DEPTH = 256  # libxml2's limit without XML_PARSE_HUGE, which the Office libraries keep

# Zip packages that are not Microsoft Office's, by what messages call them.
_PACKAGE_KINDS = {
    ".epub": "EPUB book",
    **dict.fromkeys([".odt", ".ods", ".odp"], "OpenDocument file"),
}

# An obvious title line: at most this long, in the first few hundred characters.
_TITLE_CHARS = 100
_TITLE_WORDS = 14
_TITLE_SCAN = 1000
_SENTENCE_PUNCTUATION = frozenset(".,;:。，；：、")
_SECOND_SENTENCE = re.compile(r"[.!?。！？]\s+\w")
_PLACEHOLDER_TITLE = re.compile(
    r"(?i)untitled(?: document)?|no title|\(?anonymous\)?|document\d+"
    r"|microsoft (?:word|powerpoint|excel) - .*"
)


def loader_error(path: Path, problem: str) -> LoaderError:
    """Build a :class:`LoaderError` whose message starts with the file path.

    Args:
        path: the file that failed.
        problem: what is wrong and how to fix it.

    Returns:
        The error, for the caller to raise (and chain).
    """
    return LoaderError(f"{escape_surrogates(str(path))}: {problem}")


def ocr_unavailable(path: Path, problem: str) -> OcrUnavailableError:
    """The error for a scan not read because OCR is off or cannot run (the file is skipped)."""
    return OcrUnavailableError(f"{escape_surrogates(str(path))}: {problem}", problem)


def file_too_large(path: Path, size: int, limit: int, grew: bool = False) -> LoaderError:
    """The error for a file over ``ingest.max_file_bytes``."""
    growing = " (it grew while being read)" if grew else ""
    return loader_error(
        path, f"too large: {size} bytes{growing} > limit {limit}; raise ingest.max_file_bytes"
    )


def too_much_text(path: Path, limit: int) -> LoaderError:
    """The error for a file whose text runs past ``ingest.max_extracted_chars``."""
    return loader_error(
        path, f"extracts to more than {limit} characters; raise ingest.max_extracted_chars"
    )


class CharBudget:
    """Counts the characters a loader extracts, and stops it once they pass the limit."""

    def __init__(self, path: Path, limits: Limits) -> None:
        self.path = path
        self.limit = limits.max_chars
        self.used = 0
        # The loaders of structured files (Office, JSON, tables, scans) count their text
        # here as they go: where a slow one (a large workbook) stops once the time is up.
        self.deadline = limits.deadline

    def spend(self, text: str) -> str:
        """Count ``text`` and return it.

        Raises:
            LoaderError: the text so far is over the limit.
        """
        self.count(len(text))
        return text

    def count(self, chars: int) -> None:
        """Count ``chars`` more characters.

        Raises:
            LoaderError: the text so far is over the limit, or the file's time is up.
        """
        self.used += chars
        if self.used > self.limit:
            raise too_much_text(self.path, self.limit)
        if self.deadline.passed():
            raise over_time(self.path, self.deadline.seconds, f"after {self.used:,} characters")


def pick_title(path: Path, *candidates: str | None) -> str:
    """Return the first non-blank candidate, stripped, else the file stem.

    Args:
        path: the file, whose stem is the last resort.
        *candidates: possible titles, best first.

    Returns:
        The title to show for the document.
    """
    for candidate in candidates:
        if candidate and candidate.strip():
            return " ".join(candidate.split())
    return path.stem


def first_line_title(text: str) -> str | None:
    """The text's first line when it is obviously a title: short, with letters, not a
    sentence (no full stop, comma, colon or semicolon at its end, no second sentence),
    and set off from what follows (a blank line, or a longer line of body text: the first
    of a list of short lines is no title).

    For formats with no title markup (a PDF without a Title property, plain text), where
    the first line is what a reader takes for the title.
    """
    lines = text[:_TITLE_SCAN].split("\n")
    index = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    line = " ".join(lines[index].split()) if index < len(lines) else ""
    following = lines[index + 1].strip() if index + 1 < len(lines) else ""
    if not 0 < len(line) <= _TITLE_CHARS or len(line.split()) > _TITLE_WORDS:
        return None
    if following and len(following) <= len(line):
        return None
    if not any(char.isalpha() for char in line) or line[-1] in _SENTENCE_PUNCTUATION:
        return None
    return None if _SECOND_SENTENCE.search(line) else line


def is_placeholder_title(title: str | None) -> bool:
    """Whether a document property is a tool's default rather than a title (ReportLab
    writes ``untitled``, Word's PDF printer ``Microsoft Word - report.docx``)."""
    return title is not None and bool(_PLACEHOLDER_TITLE.fullmatch(title.strip()))


def check_office_file(path: Path, data: bytes, extension: str, limits: Limits) -> None:
    """Reject encrypted, non-zip or oversized files before an Office library sees them.

    The libraries' own errors for the first two are cryptic (``KeyError``,
    ``BadZipFile``), so the common causes get a clear message here. Sizes come from
    the zip's directory: :mod:`zipfile`, which all three libraries read through,
    never unpacks an entry past its recorded size.

    Args:
        path: the file, for the message.
        data: its bytes.
        extension: the expected extension (``.docx`` …), for the message.
        limits: ``max_bytes`` bounds what the entries unpack to, together.

    Raises:
        LoaderError: the file is encrypted (or a legacy binary Office file), not a zip,
            unpacks to more than the limit, or holds an entry packed like a zip bomb.
    """
    if data.startswith(_OLE_SIGNATURE):
        raise loader_error(
            path,
            "is encrypted/password-protected (or an old binary Office file): remove the "
            f"password, or open it in Office and save it as {extension}",
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise not_office_file(path, extension) from exc
    unpacked = sum(entry.file_size for entry in entries)
    if unpacked > limits.max_bytes:
        raise loader_error(
            path,
            f"too large: unpacks to {unpacked} bytes > limit {limits.max_bytes}; "
            "raise ingest.max_file_bytes",
        )
    for entry in entries:
        if entry.file_size > _RATIO_FLOOR and entry.file_size > _MAX_RATIO * max(
            entry.compress_size, 1
        ):
            raise loader_error(
                path,
                f"looks like a zip bomb: {entry.filename} unpacks {entry.file_size} bytes "
                f"from {entry.compress_size} (over {_MAX_RATIO}:1, {_kind(extension)}s pack "
                "5-30:1); "
                "if it is genuine, open it in its application and save it again",
            )


def not_office_file(path: Path, extension: str, cause: BaseException | None = None) -> LoaderError:
    """The error for an Office file that cannot be opened.

    Args:
        path: the file, for the message.
        extension: the expected extension (``.docx`` …).
        cause: what the library raised: libxml2's limit on nesting (256 levels, which
            bounds its work) is no corruption.

    Returns:
        The error, for the caller to raise (and chain).
    """
    if cause is not None and "Excessive depth" in str(cause):
        return loader_error(
            path,
            f"nests XML elements deeper than {_XML_DEPTH} levels, past what its reader goes: "
            "no document nests so deep; re-save it from its application",
        )
    return loader_error(
        path,
        f"is not a valid {extension} (corrupt or not an {_kind(extension)}): re-save it from "
        "its application or give it the right extension",
    )


def _kind(extension: str) -> str:
    """What a zip package of ``extension`` is called in messages (after "an")."""
    return _PACKAGE_KINDS.get(extension, "Office file")


def join_blocks(blocks: Iterable[tuple[str, bool]], budget: CharBudget | None) -> str:
    """Join blocks with blank lines, keeping consecutive list items on adjacent lines;
    stop once they pass the budget (None: they were counted as they were read)."""
    parts: list[str] = []
    previous_is_item = False
    for text, is_item in blocks:
        if not text:
            continue
        if parts:
            parts.append("\n" if is_item and previous_is_item else "\n\n")
        parts.append(budget.spend(text) if budget is not None else text)
        previous_is_item = is_item
    return "".join(parts)
