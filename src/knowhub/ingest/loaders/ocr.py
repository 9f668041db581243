"""OCR of page images: Tesseract in this process (tesserocr), offline, en/zh/ru by default.

Chosen by measurement (docs/benchmarks.md, "OCR engines"): a scanned page (grey paper,
noise: no one grey level covers much of it) is binarised with Sauvola's method
(``thresholding_method=2``; the default global Otsu read nothing of some noisy scans) and
read as one block of text (page segmentation mode 6; Tesseract's layout analysis dropped
whole noisy paragraphs as pictures). A clean page (a screenshot, a digital image: its
background one grey level) is read as Tesseract does by default (Otsu, layout analysis):
Sauvola and one block lost most of a table's cells there, and layout analysis keeps columns
and table rows apart. One pass with every language's model needs no language detection and
costs English and Russian nothing, but Chinese up to 5 % of its characters: a page whose
text is mostly CJK is read again with the CJK model(s) alone. Likewise a page of Latin
letters where a few came out Cyrillic (small screen text: "95 min" read "95 тт") is read
again with ``eng`` alone.

A Tesseract engine is not thread-safe but may move between threads, so engines are lent
from a pool (one per page being read at a time) and kept for the next file: loading the
three models takes ~0.2 s. tesserocr is imported on the first page that needs OCR.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowhub.ingest.loaders.budget import Deadline

__all__ = ["DEFAULT_LANGUAGES", "Ocr", "OcrError", "OcrOptions", "PageImage", "looks_clean"]

DEFAULT_LANGUAGES = "eng+chi_sim+rus"
# Where distributions put the language data: Debian/Ubuntu (Tesseract 5, then 4), Fedora and
# Arch, a source build or Homebrew on Intel, Homebrew on Apple silicon.
TESSDATA_DIRS = (
    Path("/usr/share/tesseract-ocr/5/tessdata"),
    Path("/usr/share/tesseract-ocr/4.00/tessdata"),
    Path("/usr/share/tessdata"),
    Path("/usr/local/share/tessdata"),
    Path("/opt/homebrew/share/tessdata"),
)
_CJK_MODELS = frozenset(
    {"chi_sim", "chi_tra", "jpn", "kor", "chi_sim_vert", "chi_tra_vert", "jpn_vert", "kor_vert"}
)
_CJK_SHARE = 0.3  # of a page's characters, above which it is read again with CJK models alone
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u3000-\u303f\uff00-\uffef"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LATIN_SHARE = 0.8  # of a page's letters, above which Cyrillic ones are taken for misreadings
_LATIN_CHAR = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CYRILLIC_CHAR = re.compile(r"[\u0400-\u04ff]")
# Tesseract may space CJK characters apart ("生 产 数 据"): jieba and readers want them
# joined. One space only: a run of them is a gap between a table's columns.
_CJK_GAP = re.compile(f"(?<=[{_CJK}])[ \t](?=[{_CJK}])")
_BLANK_LINES = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]{2,}")  # layout analysis pads a table's columns
_IDLE_PER_MODEL = 4  # engines kept per language set once their pages are read
# A clean page's most common grey level (its background) covers most of it (measured 84-89 %
# of screenshots and rendered text); on a scan noise spreads it (2 %).
_CLEAN_BACKGROUND = 0.3
_SCAN_MODE = (6, "2")  # page segmentation mode, thresholding method: one block, Sauvola
_CLEAN_MODE = (3, "0")  # layout analysis, Otsu: Tesseract's defaults


class OcrError(RuntimeError):
    """Tesseract could not start or failed on a page; the message says why and what to do."""


@dataclass(frozen=True)
class OcrOptions:
    """The ``ingest.ocr*`` settings.

    Attributes:
        enabled: ``ingest.ocr``: read scanned pages and images at all.
        languages: Tesseract models, ``+``-joined (``eng+chi_sim+rus``).
        dpi: resolution a PDF page is rendered at for OCR.
        tessdata: the folder of ``*.traineddata``; None: the usual system folders.
        max_pixels: a larger page or image is not read (Tesseract's memory grows with it).
        max_pages: a file with more pages to read fails (0: no limit).
    """

    enabled: bool = True
    languages: str = DEFAULT_LANGUAGES
    dpi: int = 200
    tessdata: Path | None = None
    max_pixels: int = 40_000_000
    max_pages: int = 200


@dataclass(frozen=True)
class PageImage:
    """One page as 8-bit grey pixels, rows ``stride`` bytes apart, scanned at ``dpi``."""

    pixels: bytes
    width: int
    height: int
    stride: int
    dpi: int


@dataclass(frozen=True)
class _Setup:
    tessdata: str
    languages: str  # those whose data was found
    cjk: str | None  # the CJK models alone, for a page read again; None: no second pass
    latin: str | None  # "eng", for a page of Latin letters read again; None: no second pass
    missing: tuple[str, ...]  # asked for, not found


class Ocr:
    """OCR for one file's load: whether it can run (checked on first use) and reading pages,
    each in the time the file has left (``deadline``)."""

    def __init__(self, options: OcrOptions, deadline: Deadline | None = None) -> None:
        self.options = options
        self.deadline = deadline or Deadline()
        self._setup: _Setup | str | None = None

    @property
    def problem(self) -> str | None:
        """Why OCR cannot run here (no tesserocr, no language data), with the fix; None: it can."""
        setup = self._ready()
        return setup if isinstance(setup, str) else None

    @property
    def note(self) -> str | None:
        """A warning for a file OCR reads without some of the languages asked for."""
        setup = self._ready()
        if isinstance(setup, str) or not setup.missing:
            return None
        return (
            f"OCR read it without {'+'.join(setup.missing)} (no language data in "
            f"{setup.tessdata}): {_install(setup.missing)}"
        )

    def read(self, image: PageImage) -> str:
        """The page's text: lines as Tesseract found them, paragraphs apart by a blank line.

        Raises:
            OcrError: OCR cannot run (see :attr:`problem`), Tesseract failed on the page, or
                the file's time ran out while it read it (:attr:`deadline` has passed).
        """
        setup = self._ready()
        if isinstance(setup, str):
            raise OcrError(setup)
        mode = _CLEAN_MODE if looks_clean(image) else _SCAN_MODE
        text = _recognise(setup.tessdata, setup.languages, image, mode, self.deadline)
        again = _second_pass(setup, text)
        if again is not None:
            text = _recognise(setup.tessdata, again, image, mode, self.deadline)
        return _tidy(text)

    def _ready(self) -> _Setup | str:
        if self._setup is None:
            self._setup = _set_up(self.options)
        return self._setup


def _set_up(options: OcrOptions) -> _Setup | str:
    """Find tesserocr and the language data, or say what is missing and how to get it."""
    try:
        import tesserocr  # noqa: F401  (imported here: only a scan pays for it)
    except ImportError as exc:
        return (
            f"OCR needs tesserocr, which is not installed ({exc}): pip install "
            "tesserocr==2.13.0 (on macOS, brew install tesseract first), or set ingest.ocr: false"
        )
    wanted = tuple(dict.fromkeys(m for m in options.languages.split("+") if m))
    folder = _tessdata(options.tessdata, wanted)
    found = tuple(m for m in wanted if folder and (folder / f"{m}.traineddata").is_file())
    if folder is None or not found:
        where = folder or options.tessdata or f"{TESSDATA_DIRS[0]} or the other usual folders"
        return (
            f"OCR needs Tesseract's language data ({', '.join(wanted)}; none found in "
            f"{where}): {_install(wanted)}, or set ingest.ocr: false"
        )
    cjk = tuple(m for m in found if m in _CJK_MODELS)
    second = "+".join(cjk) if cjk and len(cjk) < len(found) else None
    latin = "eng" if "eng" in found and len(found) > 1 else None
    missing = tuple(m for m in wanted if m not in found)
    return _Setup(str(folder), "+".join(found), second, latin, missing)


def _tessdata(configured: Path | None, wanted: tuple[str, ...]) -> Path | None:
    """The configured folder, else the first usual one holding every model wanted, else
    the first holding any."""
    if configured is not None:
        return configured if configured.is_dir() else None
    folders = [d for d in TESSDATA_DIRS if d.is_dir()]
    for folder in folders:
        if all((folder / f"{m}.traineddata").is_file() for m in wanted):
            return folder
    return next(
        (d for d in folders if any((d / f"{m}.traineddata").is_file() for m in wanted)), None
    )


def _install(models: tuple[str, ...]) -> str:
    """How to install the models on Debian/Ubuntu (``chi_sim`` is ``tesseract-ocr-chi-sim``)."""
    packages = " ".join(f"tesseract-ocr-{m.lower().replace('_', '-')}" for m in models)
    return f"apt-get install {packages} (or point ingest.ocr_tessdata at their folder)"


def looks_clean(image: PageImage) -> bool:
    """Whether the page is clean (one grey level, its background, covers much of it) rather
    than a scan (grey paper, noise, blur)."""
    import numpy as np

    pixels = np.frombuffer(image.pixels, dtype=np.uint8)
    return bool(pixels.size) and np.bincount(pixels).max() / pixels.size > _CLEAN_BACKGROUND


def _recognise(
    tessdata: str, languages: str, image: PageImage, mode: tuple[int, str], deadline: Deadline
) -> str:
    with _engine(tessdata, languages) as api:
        try:
            # Both are the engine's own (Tesseract class members), not process-wide.
            api.SetPageSegMode(mode[0])
            api.SetVariable("thresholding_method", mode[1])
            api.SetImageBytes(image.pixels, image.width, image.height, 1, image.stride)
            api.SetSourceResolution(image.dpi)
            # Tesseract stops recognising at the timeout (after layout analysis, which it
            # does not interrupt): a flag could not reach into its C++ loop.
            if not api.Recognize(timeout=deadline.left_ms() or 0):
                why = "the file's time ran out" if deadline.passed() else "it gave up"
                raise OcrError(f"Tesseract stopped reading the page ({why})")
            return str(api.GetUTF8Text())
        except RuntimeError as exc:
            raise OcrError(f"Tesseract failed on the page ({exc})") from exc
        finally:
            api.Clear()


_pool_lock = threading.Lock()
_idle: dict[tuple[str, str], list[Any]] = {}


@contextmanager
def _engine(tessdata: str, languages: str) -> Iterator[Any]:
    """A Tesseract engine for ``languages`` that no other thread uses until it is returned."""
    key = (tessdata, languages)
    with _pool_lock:
        idle = _idle.setdefault(key, [])
        api = idle.pop() if idle else None
    if api is None:
        api = _start(tessdata, languages)
    try:
        yield api
    finally:
        with _pool_lock:
            keep = len(_idle[key]) < _IDLE_PER_MODEL
            if keep:
                _idle[key].append(api)
        if not keep:
            api.End()


def _start(tessdata: str, languages: str) -> Any:
    import tesserocr

    try:
        return tesserocr.PyTessBaseAPI(path=tessdata, lang=languages)
    except RuntimeError as exc:
        raise OcrError(
            f"Tesseract could not load {languages} from {tessdata} ({exc}): reinstall the "
            "language data, or set ingest.ocr: false"
        ) from exc


def _second_pass(setup: _Setup, text: str) -> str | None:
    """The models to read the page with again, if its first reading calls for it."""
    chars = len(text) - sum(map(str.isspace, text))
    cjk = len(_CJK_CHAR.findall(text))
    if setup.cjk is not None and chars and cjk / chars > _CJK_SHARE:
        return setup.cjk
    # Latin and Cyrillic share glyphs ("min" read "тт"); CJK words on a Latin page are not
    # such confusions, and would be lost to eng alone.
    latin, cyrillic = len(_LATIN_CHAR.findall(text)), len(_CYRILLIC_CHAR.findall(text))
    mostly_latin = latin >= _LATIN_SHARE * (latin + cyrillic)
    if setup.latin is not None and cyrillic and not cjk and mostly_latin:
        return setup.latin
    return None


def _tidy(text: str) -> str:
    """Tesseract's text with CJK characters joined, runs of spaces one, lines right-trimmed,
    at most one blank line in a row."""
    text = text.replace("\r\n", "\n").replace("\f", "\n")
    text = _SPACES.sub(" ", _CJK_GAP.sub("", text))
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()
