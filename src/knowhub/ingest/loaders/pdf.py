"""PDF loader built on pypdfium2 (PDFium): text page by page, with page offsets; a page with
no text layer (a scan) is rendered and read by OCR, one page at a time."""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.budget import too_many_scans
from knowhub.ingest.loaders.common import (
    CharBudget,
    Limits,
    PageProgress,
    first_line_title,
    is_placeholder_title,
    loader_error,
    ocr_unavailable,
    pick_title,
)
from knowhub.ingest.loaders.encoding import normalize_newlines
from knowhub.ingest.loaders.figures import Figures, page_pictures
from knowhub.ingest.loaders.markdown import markdown_table
from knowhub.ingest.loaders.ocr import Ocr, OcrError, OcrOptions, PageImage
from knowhub.ingest.loaders.pdf_headings import (
    Line,
    Mark,
    font_marks,
    outline_marks,
    page_lines,
    place_marks,
)
from knowhub.ingest.loaders.pdf_tables import Glyph, Rules, Table, find_tables
from knowhub.models import LoadedDocument

__all__ = ["PAGE_SEPARATOR", "PDFIUM_LOCK", "load_pdf"]

PAGE_SEPARATOR = "\n\n"
# PDFium is not thread-safe, not even across documents (pypdfium2 docs, Python API,
# "Incompatibility with Threading"); the ingest pipeline may load files from several
# threads, so every PDFium call is serialized, and every handle closed inside the lock.
# OCR runs outside it: a long scan must not hold up the console's page images.
PDFIUM_LOCK = threading.Lock()
# A page is a scan when its text layer is (almost) empty and images cover much of it: the
# scans measured had 0 characters (18 with a scanner's one-line stamp) and full image cover,
# pages of text hundreds of characters (docs/benchmarks.md, "OCR engines").
_SCAN_MAX_CHARS = 32
_SCAN_MIN_COVER = 0.3
# Scanned pages read at once (each on its own Tesseract engine), at most one a core.
_OCR_THREADS = 4
# A page drawing more paths than this is a picture, not a ruled table: its lines are not read.
_MAX_RULES = 5000


@dataclass
class _Scans:
    """What became of a PDF's pages that have no text layer (1-based page numbers)."""

    read: list[int] = field(default_factory=list)
    found: int = 0  # scans met so far that OCR is to read
    off: list[int] = field(default_factory=list)  # ingest.ocr is false
    unavailable: list[int] = field(default_factory=list)  # no tesserocr or language data
    problem: str = ""  # why OCR is unavailable
    # Why pages were not read (too large, Tesseract failed) → those pages: a 300-page scan
    # too large at this dpi is one line.
    refused: dict[str, list[int]] = field(default_factory=dict)

    def unread(self) -> tuple[int, ...]:
        """Every scanned page left unread, whatever the reason."""
        refused = (page for pages in self.refused.values() for page in pages)
        return tuple(sorted({*self.off, *self.unavailable, *refused}))

    def refuse(self, number: int, reason: str) -> None:
        self.refused.setdefault(reason, []).append(number)

    def _refusals(self) -> list[str]:
        return [f"{_page_list(pages)}: not read: {why}" for why, pages in self.refused.items()]

    def warnings(self, path: Path, ocr: Ocr) -> tuple[str, ...]:
        """For a PDF whose other pages have text: what was left unread, and why."""
        out = []
        if self.off:
            out.append(f"{_page_list(self.off)}: no text layer, not read; enable ingest.ocr")
        if self.unavailable:
            out.append(f"{_page_list(self.unavailable)}: scanned, not read: {self.problem}")
        out += self._refusals()
        if self.read and ocr.note:
            out.append(ocr.note)
        return tuple(f"{path}: {warning}" for warning in out)

    def no_text(self, path: Path) -> LoaderError:
        """The error for a PDF with no text at all: why it has none."""
        if self.off:
            return ocr_unavailable(path, "no text layer; enable ingest.ocr to read its scans")
        if self.unavailable:
            return ocr_unavailable(path, f"is scanned, not read: {self.problem}")
        return loader_error(path, self._why_empty())

    def _why_empty(self) -> str:
        if self.refused:
            return "; ".join(self._refusals())
        if self.read:
            return f"OCR found no text on its scanned {_page_list(self.read)}"
        return (
            "has no extractable text, and no page is a scanned image: if its text is drawn "
            "as shapes, run OCR on it first (e.g. `ocrmypdf --force-ocr in.pdf out.pdf`) and "
            "ingest the result"
        )


def load_pdf(
    path: Path, data: bytes, limits: Limits, on_page: PageProgress | None = None
) -> LoadedDocument:
    """Load a PDF: pages joined by a blank line, ``page_starts`` marking each page.

    A page with (almost) no text layer that images cover is rendered at ``limits.ocr.dpi``
    and read by OCR in its place, keeping its page number.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the text (pages past it are not extracted); ``ocr``
            says whether and how scanned pages are read.
        on_page: told of each page OCR read, as ``(page, pages)``.

    Returns:
        The document, titled by the PDF's Title property (unless a tool's placeholder,
        such as ``untitled``), else its first line when that is obviously a title, else
        its stem. Its warnings name scanned pages left unread, and why.

    Raises:
        OcrUnavailableError: it has no text layer, and OCR is off or unavailable.
        LoaderError: the PDF is password-protected, unreadable, has no text (nor OCR
            found any), or holds more text than the limit.
    """
    ocr = Ocr(limits.ocr, limits.deadline)
    scans = _Scans()
    figures = Figures(path, limits.images, ocr)
    reader = _Reader(path, ocr, scans, figures, [])
    pages, properties, marks = _read_pdf(path, data, CharBudget(path, limits), reader, on_page)
    if not any(pages):
        raise scans.no_text(path)
    starts: list[int] = []
    offset = 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    metadata: dict[str, Any] = {"pages": len(pages)}
    if scans.read:
        metadata["ocr_pages"] = len(scans.read)
    if properties.get("Author"):
        metadata["author"] = properties["Author"]
    text = PAGE_SEPARATOR.join(pages)
    headings = place_marks(marks or font_marks(reader.lines or []), pages, starts)
    declared = properties.get("Title")
    return LoadedDocument(
        text=text,
        title=pick_title(
            path, None if is_placeholder_title(declared) else declared, first_line_title(text)
        ),
        format="pdf",
        headings=headings,
        page_starts=tuple(starts),
        metadata=metadata,
        line_map=None,  # a PDF has pages, not lines: cited by page
        warnings=scans.warnings(path, ocr) + figures.notes(),
        images=figures.images(text),
        unread_pages=scans.unread(),
    )


@dataclass(frozen=True)
class _Reader:
    """What reads a PDF's pages: OCR for scans, what became of them, the figures met, and
    the lines of each page with a text layer (page 0-based) when the PDF has no outline."""

    path: Path
    ocr: Ocr
    scans: _Scans
    figures: Figures
    lines: list[tuple[int, list[Line]]] | None

    def in_time(self, number: int, count: int) -> None:
        """Fail the file if its time is up (``ingest.max_seconds_per_file``)."""
        self.ocr.deadline.check(self.path, f"at page {number} of {count}")

    def one_more_scan(self, number: int, count: int) -> None:
        """Count page ``number`` as one to read by OCR; fail the file past
        ``ingest.ocr_max_pages``, before the page is read."""
        self.scans.found += 1
        limit = self.ocr.options.max_pages
        if 0 < limit < self.scans.found:
            which = f"the {_ordinal(self.scans.found)} is page {number} of {count}"
            raise too_many_scans(self.path, f"more than {limit} pages", limit, which)


def _read_pdf(
    path: Path,
    data: bytes,
    budget: CharBudget,
    reader: _Reader,
    on_page: PageProgress | None,
) -> tuple[list[str], dict[str, str], list[Mark]]:
    """Each page's text (stripped), the document properties (Title, Author …) and its
    outline's entries."""
    import pypdfium2 as pdfium

    pdf = _open(path, data)
    try:
        with PDFIUM_LOCK:
            count = len(pdf)
            properties: dict[str, str] = pdf.get_metadata_dict(skip_empty=True)
            marks = outline_marks(pdf, count)
        # With an outline, the lines' fonts are not needed: not read.
        pages = _read_pages(
            pdf, count, replace(reader, lines=None) if marks else reader, budget, on_page
        )
    except pdfium.PdfiumError as exc:
        raise _unreadable(path) from exc
    finally:
        with PDFIUM_LOCK:
            pdf.close()
    return pages, properties, marks


def _read_pages(
    pdf: Any, count: int, reader: _Reader, budget: CharBudget, on_page: PageProgress | None
) -> list[str]:
    """The pages' texts in order; scanned pages are read by OCR on a few threads at once
    (Tesseract releases the GIL: one thread read 3.4 pages/s, two 5.8), at most one page
    per thread in flight past the one awaited, so memory stays a few page images."""
    workers = min(_OCR_THREADS, os.cpu_count() or 1)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="knowhub-ocr")
    waiting: deque[_Waiting] = deque()
    pages: list[str] = []

    def settle() -> None:
        number = waiting[0].number
        reader.in_time(number, count)  # a scan stopped by the deadline fails
        text = _settled(waiting.popleft(), reader.scans, on_page, count)
        reader.in_time(number, count)  # its OCR ended at the deadline: say at which page
        pages.append(budget.spend(text))

    try:
        for number in range(1, count + 1):
            reader.in_time(number, count)
            page = _page(pdf, number, reader)
            if isinstance(page, _Scan):
                reader.one_more_scan(number, count)
                future = pool.submit(_read_scan, reader.ocr, page.image)
                waiting.append(_Waiting(number, page.text, future))
            else:
                waiting.append(_Waiting(number, page, None))
            while waiting and (waiting[0].done() or _in_flight(waiting) > workers):
                settle()
        while waiting:
            settle()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a failed run leaves no page reading
    return pages


@dataclass(frozen=True)
class _Scan:
    """A scanned page rendered for OCR, and its own text layer (a stamp, or nothing)."""

    image: PageImage
    text: str


@dataclass(frozen=True)
class _Waiting:
    """A page in order: its text, or the OCR reading it."""

    number: int
    text: str
    reading: Future[str | OcrError] | None

    def done(self) -> bool:
        return self.reading is None or self.reading.done()


def _in_flight(waiting: deque[_Waiting]) -> int:
    return sum(1 for page in waiting if page.reading is not None)


def _read_scan(ocr: Ocr, image: PageImage) -> str | OcrError:
    try:
        return ocr.read(image)  # outside PDFium's lock: seconds, where PDFium took milliseconds
    except OcrError as exc:
        return exc


def _settled(page: _Waiting, scans: _Scans, on_page: PageProgress | None, count: int) -> str:
    """The page's text once read; what became of a scan is noted in page order."""
    if page.reading is None:
        return page.text
    read = page.reading.result()
    if isinstance(read, OcrError):
        scans.refuse(page.number, str(read))
        return page.text
    scans.read.append(page.number)
    if on_page is not None:
        on_page(page.number, count)
    return read or page.text


def _open(path: Path, data: bytes) -> Any:
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            return pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if exc.err_code == pdfium.raw.FPDF_ERR_PASSWORD:
                raise loader_error(
                    path, "is password-protected: decrypt it first (e.g. `qpdf --decrypt`)"
                ) from exc
            raise _unreadable(path) from exc


def _page(pdf: Any, number: int, reader: _Reader) -> str | _Scan:
    """Page ``number``'s text (its text layer and its figures' blocks), or a scanned page
    rendered for OCR to read."""
    ocr, scans, figures = reader.ocr, reader.scans, reader.figures
    with PDFIUM_LOCK:
        page = pdf[number - 1]
        try:
            textpage = page.get_textpage()
            try:
                text = _page_text(textpage)
                scanned = _is_scan(page, text)
                if not scanned:
                    if reader.lines is not None:
                        reader.lines.append((number - 1, page_lines(textpage)))
                    text = _with_tables(page, textpage, text)
                    pictures = page_pictures(page, figures)
            finally:
                textpage.close()
        finally:
            page.close()
    if not scanned:
        # PDFium gives no place in the text for a picture: its block ends its page.
        blocks = [block for picture in pictures if (block := figures.add(picture, number))]
        return PAGE_SEPARATOR.join([text, *blocks]) if text else PAGE_SEPARATOR.join(blocks)
    if not ocr.options.enabled:
        scans.off.append(number)
        return text
    if ocr.problem is not None:
        scans.unavailable.append(number)
        scans.problem = ocr.problem
        return text
    with PDFIUM_LOCK:
        image = _render(pdf, number, ocr.options)
    if isinstance(image, str):
        scans.refuse(number, image)
        return text
    return _Scan(image, text)


def _page_text(textpage: Any, top: float | None = None, bottom: float | None = None) -> str:
    """The text of the page, or of its band between heights ``bottom`` and ``top``."""
    # get_text_bounded, unlike get_text_range, is not limited to UCS-2.
    return normalize_newlines(textpage.get_text_bounded(top=top, bottom=bottom)).strip()


def _with_tables(page: Any, textpage: Any, text: str) -> str:
    """The page's ``text`` with each table found on it given as a Markdown table, between
    the text above and below it; ``text`` itself when no table is found, or when its
    characters cannot be read (a damaged page keeps the text PDFium gave)."""
    import pypdfium2 as pdfium

    try:
        tables = find_tables(_glyphs(textpage), _rules(page))
    except (pdfium.PdfiumError, ValueError):
        return text
    return "\n\n".join(filter(None, _parts(textpage, tables))) if tables else text


def _parts(textpage: Any, tables: list[Table]) -> list[str]:
    parts, top = [], None
    for table in tables:
        parts += [_page_text(textpage, top, table.top), markdown_table(table.rows)]
        top = table.bottom
    return [*parts, _page_text(textpage, top)]


def _glyphs(textpage: Any) -> list[Glyph]:
    import pypdfium2.raw as pdfium_c

    glyphs = []
    for index in range(textpage.count_chars()):
        code = pdfium_c.FPDFText_GetUnicode(textpage, index)
        # Loose: the font's height and advance, so a word's letters touch and a line's
        # characters share a bottom.
        left, bottom, right, top = textpage.get_charbox(index, loose=True)
        glyphs.append(Glyph(_char(code), left, bottom, right, top))
    return glyphs


def _char(code: int) -> str:
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return "\ufffd"  # a broken ToUnicode map: not a character Python can keep
    return chr(code)


def _rules(page: Any) -> Rules:
    """The page's drawn lines; none on a page of many paths (a drawing)."""
    import pypdfium2 as pdfium

    paths = page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_PATH], max_depth=1)
    boxes: list[tuple[float, float, float, float]] = []
    for path in paths:
        if len(boxes) == _MAX_RULES:
            return Rules()
        boxes.append(path.get_bounds())
    return Rules.from_boxes(boxes)


def _is_scan(page: Any, text: str) -> bool:
    """(Almost) no text layer, and images cover a good part of the page."""
    if len(text) - sum(map(str.isspace, text)) >= _SCAN_MAX_CHARS:
        return False
    import pypdfium2 as pdfium

    width, height = page.get_size()
    covered = 0.0
    for obj in page.get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=2):
        left, bottom, right, top = obj.get_bounds()
        covered += max(0.0, right - left) * max(0.0, top - bottom)
    area = float(width * height)
    return area > 0 and covered / area >= _SCAN_MIN_COVER


def _render(pdf: Any, number: int, options: OcrOptions) -> PageImage | str:
    """Page ``number`` as grey pixels at ``options.dpi``, or why it is not read (too large)."""
    page = pdf[number - 1]
    try:
        scale = options.dpi / 72
        width, height = (round(side * scale) for side in page.get_size())
        if width * height > options.max_pixels:
            return (
                f"{width}x{height} pixels at {options.dpi} dpi is over "
                f"ingest.ocr_max_megapixels ({options.max_pixels / 1e6:g}); lower "
                "ingest.ocr_dpi or raise the limit"
            )
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            if bitmap.n_channels == 1:
                pixels, stride = bytes(bitmap.buffer), bitmap.stride
            else:  # PDFium chose colour after all: convert (a copy, still one page)
                pixels, stride = bitmap.to_pil().convert("L").tobytes(), bitmap.width
            return PageImage(pixels, bitmap.width, bitmap.height, stride, options.dpi)
        finally:
            bitmap.close()
    finally:
        page.close()


def _page_list(numbers: list[int]) -> str:
    """``page 3`` or ``pages 1-4, 7``: a 300-page scan is one run, not 300 numbers."""
    runs: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], -1]:
        if number != previous + 1:
            runs.append(str(start) if start == previous else f"{start}-{previous}")
            start = number
        previous = number
    return f"{'page' if len(numbers) == 1 else 'pages'} {', '.join(runs)}"


def _ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``201st`` …"""
    suffix = (
        "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"


def _unreadable(path: Path) -> LoaderError:
    return loader_error(
        path, "is not a readable PDF (corrupt or truncated): re-export or re-download it"
    )
