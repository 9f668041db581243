"""Offline OCR engines side by side (issue 20): character error rate and pages per second.

    python -m benchmarks.ocr [--out FILE] [--pages 2] [--sizes 10,14,20] [--dpi 200]
                             [--pdf-dpis 150,200,300] [--engines rapidocr,tesserocr,tesseract-cli]

A seeded, generated set: for each language (en, zh, ru) ``--pages`` pages of paragraph text
rendered on A4 at ``--dpi`` in each font size, clean and "scanned" (1-2° skew, blur, grey
paper lit unevenly, gaussian noise, dust, JPEG artefacts); and one scanned-looking PDF
(images only, no text layer; a page per language, 11 pt, scanned at 300 dpi) rasterised back
with pypdfium2 at each of ``--pdf-dpis``, as knowhub would. Every engine found is run on
every page of its languages:

- ``rapidocr``: rapidocr-onnxruntime, its PP-OCRv4 models (inside the wheel; Chinese and
  Latin, no Cyrillic), as shipped (``default``), and for English without its line
  classifier (``no-cls``);
- ``tesserocr``: the Tesseract inside the tesserocr wheel, in this process, with the system's
  traineddata (Debian's tesseract-ocr-eng/-chi-sim/-rus): each language's own model, then
  ``eng+chi_sim+rus`` (no language detection needed); each as Tesseract runs by default,
  with Sauvola's binarisation (``:sauvola``), and that on the page as one block (``,psm6``);
- ``tesseract-cli``: the system's ``tesseract`` through pytesseract, one process per page
  (its model loads every call), the language's own model only.

CER is the Levenshtein distance over the reference's length, summed over pages, on text
normalised as search would see it (NFKC, CJK punctuation folded to ASCII, whitespace runs to
one space; Chinese without any whitespace); "no spaces" also drops the spaces between words,
so that what was misread shows apart from words run together. Speed is the recognition alone
(a model's load and a PDF's rasterisation are reported apart): wall pages/s with the engine's
own threading on this machine's cores, and CPU seconds per page (this process's threads plus
its child processes).
Memory is the peak of a fresh process that loads the engine and reads the largest page.
Engines or language models that are not installed are listed as absent. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import multiprocessing
import os
import platform
import resource
import shutil
import sys
import time
import unicodedata
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.ocr_set import (
    LANGS,
    PDF_SIZE_PT,
    Page,
    image_set,
    rasterise,
    scanned_pdf,
    text_layer,
    with_header,
)

ROOT = Path(__file__).resolve().parents[1]
TESS_LANG = {"en": "eng", "zh": "chi_sim", "ru": "rus"}
TESS_ALL = "eng+chi_sim+rus"
OPTIONS = ("", ":sauvola", ":sauvola,psm6")  # tesserocr's, see Tesserocr
TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata")

# --- engines ---------------------------------------------------------------------------------


class Engine:
    """One engine in one language configuration; ``load`` once, then ``read`` pages."""

    name = ""

    def __init__(self, config: str, langs: tuple[str, ...]) -> None:
        self.config, self.langs = config, langs

    def load(self) -> None:
        raise NotImplementedError

    def read(self, image: np.ndarray, dpi: int) -> str:
        raise NotImplementedError

    def close(self) -> None:
        return None


class RapidOcr(Engine):
    """``default``: as shipped; ``no-cls``: without the classifier that turns lines it takes
    for upside down (a page's lines are upright; it turned whole correct lines here)."""

    name = "rapidocr"

    def load(self) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self.ocr = RapidOCR()
        self.use_cls = self.config != "no-cls"

    def read(self, image: np.ndarray, dpi: int) -> str:
        result, _ = self.ocr(image, use_cls=self.use_cls)
        return "\n".join(line[1] for line in result or [])


class Tesserocr(Engine):
    """``LANGS[:OPTIONS]``; options, comma-separated: ``sauvola``, Sauvola's adaptive
    binarisation (``thresholding_method=2``, Tesseract 5) instead of the default global Otsu,
    which read nothing at all of some noisy scans here; ``psm6``, the page as one block of
    text (``--psm 6``) instead of Tesseract's layout analysis, which dropped whole noisy
    paragraphs as if pictures (but would read a two-column page across its columns)."""

    name = "tesserocr"

    def load(self) -> None:
        import tesserocr

        langs, _, options = self.config.partition(":")
        chosen = set(options.split(","))
        psm = tesserocr.PSM.SINGLE_BLOCK if "psm6" in chosen else tesserocr.PSM.AUTO
        self.api = tesserocr.PyTessBaseAPI(path=tessdata() or "", lang=langs, psm=psm)
        if "sauvola" in chosen:
            self.api.SetVariable("thresholding_method", "2")

    def read(self, image: np.ndarray, dpi: int) -> str:
        height, width = image.shape
        self.api.SetImageBytes(image.tobytes(), width, height, 1, width)
        self.api.SetSourceResolution(dpi)
        return str(self.api.GetUTF8Text())

    def close(self) -> None:
        self.api.End()


class TesseractCli(Engine):
    name = "tesseract-cli"

    def load(self) -> None:
        import pytesseract

        self.pytesseract = pytesseract  # the model loads in each call's process

    def read(self, image: np.ndarray, dpi: int) -> str:
        from PIL import Image

        text = self.pytesseract.image_to_string(
            Image.fromarray(image), lang=self.config, config=f"--dpi {dpi}"
        )
        return str(text)


def tessdata() -> str | None:
    if os.environ.get("TESSDATA_PREFIX"):
        return os.environ["TESSDATA_PREFIX"]
    return next((d for d in TESSDATA_DIRS if Path(d).is_dir()), None)


def tess_models() -> set[str]:
    folder = tessdata()
    return {p.stem for p in Path(folder).glob("*.traineddata")} if folder else set()


def missing(module: str) -> str | None:
    """Why ``module`` cannot be used, or None (found, not imported: imports count as load)."""
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    if module == "pytesseract" and shutil.which("tesseract") is None:
        return "no tesseract binary on PATH (apt-get install tesseract-ocr)"
    return None


def engine_plan(names: list[str]) -> tuple[list[Engine], dict[str, str]]:
    """The engine configurations to run, and those absent with the reason."""
    plan: list[Engine] = []
    absent: dict[str, str] = {}
    models = tess_models()
    modules = {"rapidocr": "rapidocr_onnxruntime", "tesserocr": "tesserocr"}
    modules["tesseract-cli"] = "pytesseract"
    for name in names:
        reason = missing(modules[name])
        if reason:
            absent[name] = reason
            continue
        if name == "rapidocr":  # no-cls: where cls turned lines
            plan += [RapidOcr("default", LANGS), RapidOcr("no-cls", ("en",))]
            continue
        kind = Tesserocr if name == "tesserocr" else TesseractCli
        options = OPTIONS if name == "tesserocr" else ("",)  # the CLI: as apt ships it
        configs: list[tuple[str, tuple[str, ...]]] = [
            (TESS_LANG[lang] + option, (lang,)) for option in options for lang in LANGS
        ]
        if name == "tesserocr":
            configs += [(TESS_ALL + option, LANGS) for option in options]
        for config, langs in configs:
            lacking = [m for m in config.split(":")[0].split("+") if m not in models]
            if lacking:
                absent[f"{name}:{config}"] = f"no traineddata for {lacking} in {tessdata()}"
            else:
                plan.append(kind(config, langs))
    return plan, absent


# --- scoring ---------------------------------------------------------------------------------

_FOLD = str.maketrans({"。": ".", "、": ",", "“": '"', "”": '"', "‘": "'", "’": "'", "—": "-"})


def normalise(text: str, lang: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    return "".join(text.split()) if lang == "zh" else " ".join(text.split())


def bare(text: str) -> str:
    """Without spaces: what was read, whether or not the words were kept apart."""
    return text.replace(" ", "")


def levenshtein(a: str, b: str) -> int:
    """Edit distance, one row at a time in numpy: a row's insertions are a running minimum
    (d[j] = min(d[j], d[j-1] + 1) is j + cummin(d[k] - k))."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    codes = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    index = np.arange(len(b) + 1)
    row = index.copy()
    for i, char in enumerate(a, 1):
        best = np.empty_like(row)
        best[0] = i
        best[1:] = np.minimum(row[:-1] + (codes != ord(char)), row[1:] + 1)
        row = np.minimum.accumulate(best - index) + index
    return int(row[-1])


def cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def peak_rss_mb(engine: Engine | None, page: Page) -> float:
    """Peak memory of a fresh process that loads ``engine`` and reads ``page`` (its child
    processes' peak added: the tesseract binary); None: this module's imports alone."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(_load_and_read, engine, page).result()


def _load_and_read(engine: Engine | None, page: Page) -> float:
    if engine is not None:
        engine.load()
        engine.read(page.image, page.dpi)
        engine.close()
    # VmHWM, not ru_maxrss: a spawned process's ru_maxrss starts at its parent's RSS (fork).
    status = Path("/proc/self/status").read_text()
    own = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    return (own + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


# --- the run ---------------------------------------------------------------------------------


def run_engine(engine: Engine, pages: list[Page]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Load the engine and read its languages' pages: its load, and a row per page."""
    label = {"engine": engine.name, "config": engine.config}
    start, cpu = time.perf_counter(), cpu_seconds()
    engine.load()
    load = label | {"load_s": time.perf_counter() - start, "load_cpu_s": cpu_seconds() - cpu}
    rows = []
    for page in pages:
        if page.lang not in engine.langs:
            continue
        start, cpu = time.perf_counter(), cpu_seconds()
        text = engine.read(page.image, page.dpi)
        wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        truth, got = normalise(page.truth, page.lang), normalise(text, page.lang)
        rows.append(
            label
            | {"page": page.name, "lang": page.lang, "condition": page.condition}
            | {"size_pt": page.size_pt, "ref": len(truth), "dist": levenshtein(truth, got)}
            | {"ref_chars": len(bare(truth)), "dist_chars": levenshtein(bare(truth), bare(got))}
            | {"wall_s": wall, "cpu_s": cpu, "text": text}
        )
    engine.close()
    largest = max(
        (p for p in pages if p.lang in engine.langs), key=lambda p: (p.image.size, p.lang == "zh")
    )
    fresh = type(engine)(engine.config, engine.langs)  # unloaded: it pickles
    load["peak_rss_mb"] = round(peak_rss_mb(fresh, largest), 1)
    return load, rows


def summarise(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """CER (summed distances over summed lengths), pages/s and CPU s/page per group."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for group, members in groups.items():
        wall, cpu = sum(r["wall_s"] for r in members), sum(r["cpu_s"] for r in members)
        out.append(
            dict(zip(keys, group, strict=True))
            | {
                "pages": len(members),
                "cer": round(sum(r["dist"] for r in members) / sum(r["ref"] for r in members), 4),
                "cer_chars": round(
                    sum(r["dist_chars"] for r in members) / sum(r["ref_chars"] for r in members), 4
                ),
                "pages_per_s": round(len(members) / wall, 3),
                "cpu_s_per_page": round(cpu / len(members), 3),
            }
        )
    return out


def markdown(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> str:
    head = [*keys, "pages", "CER %", "CER % no spaces", "pages/s (wall)", "CPU s/page"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [str(row[k]) for k in keys] + [str(row["pages"]), f"{row['cer'] * 100:.1f}"]
        cells.append(f"{row['cer_chars'] * 100:.1f}")
        cells += [f"{row['pages_per_s']:.2f}", f"{row['cpu_s_per_page']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "cores": str(os.cpu_count())}
    dists = ["rapidocr-onnxruntime", "onnxruntime", "opencv-python", "opencv-python-headless"]
    for dist in [*dists, "tesserocr", "pytesseract", "pypdfium2", "pillow", "numpy"]:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    with contextlib.suppress(Exception):  # absent, or its shared libraries are
        out["tesserocr engine"] = __import__("tesserocr").tesseract_version().split()[1]
    with contextlib.suppress(Exception):
        out["tesseract binary"] = str(__import__("pytesseract").get_tesseract_version())
    return out


def build_set(args: argparse.Namespace) -> tuple[list[Page], dict[str, Any]]:
    """The image pages, the PDF's rasterised pages, and the PDF facts (rasterising, layer)."""
    start = time.perf_counter()
    pages, firsts = image_set(args.pages, args.sizes, args.dpi)
    pdf = scanned_pdf(firsts)
    facts: dict[str, Any] = {"pdf_bytes": len(pdf), "raster_s_per_page": {}}
    for dpi in args.pdf_dpis:
        arrays, per_page = rasterise(pdf, dpi)
        facts["raster_s_per_page"][dpi] = round(per_page, 4)
        for lang, array in zip(LANGS, arrays, strict=True):
            pages.append(Page(lang, f"pdf@{dpi}", PDF_SIZE_PT, dpi, firsts[lang], array))
    facts["text_layer"] = {"scanned": text_layer(pdf)}
    facts["text_layer"]["scanned+header"] = text_layer(with_header(pdf, "Scanned 2024-05-01"))
    sample = ROOT / "examples" / "docs" / "en" / "onboarding.pdf"
    if sample.is_file():
        facts["text_layer"]["examples/docs/en/onboarding.pdf"] = text_layer(sample.read_bytes())
    facts["set_s"] = round(time.perf_counter() - start, 1)
    if args.save_set:
        save_set(args.save_set, pages, pdf)
    return pages, facts


def save_set(folder: Path, pages: list[Page], pdf: bytes) -> None:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scanned.pdf").write_bytes(pdf)
    for index, page in enumerate(pages):
        stem = f"{index:03d}-{page.name}"
        Image.fromarray(page.image).save(folder / f"{stem}.png")
        (folder / f"{stem}.txt").write_text(page.truth, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write every number (JSON) here")
    parser.add_argument("--pages", type=int, default=2, help="pages of text per language")
    parser.add_argument("--sizes", type=_ints, default=[10, 14, 20], help="font sizes, pt")
    parser.add_argument("--dpi", type=int, default=200, help="dpi the images are rendered at")
    parser.add_argument("--pdf-dpis", type=_ints, default=[150, 200, 300], help="PDF raster dpis")
    parser.add_argument("--engines", default="rapidocr,tesserocr,tesseract-cli")
    parser.add_argument("--save-set", type=Path, help="write the pages (PNG, truth) here")
    args = parser.parse_args()
    pages, facts = build_set(args)
    print(f"{len(pages)} pages generated in {facts['set_s']} s", file=sys.stderr)
    plan, absent = engine_plan(args.engines.split(","))
    facts["baseline_peak_rss_mb"] = round(peak_rss_mb(None, pages[0]), 1)
    rows: list[dict[str, Any]] = []
    loads: list[dict[str, Any]] = []
    for engine in plan:
        try:
            load, read = run_engine(engine, pages)
        except Exception as exc:  # a broken install is a result too, not the end of the run
            absent[f"{engine.name}:{engine.config}"] = f"failed: {type(exc).__name__}: {exc}"
            continue
        loads.append(load)
        rows.extend(read)
        print(f"{engine.name} {engine.config}: {len(read)} pages", file=sys.stderr)
    results = {
        "command": "python -m benchmarks.ocr " + " ".join(sys.argv[1:]),
        "versions": versions(),
        "absent": absent,
        "facts": facts,
        "loads": loads,
        "by_condition": summarise(rows, ("engine", "config", "lang", "condition")),
        "by_size": summarise(
            [r for r in rows if not r["condition"].startswith("pdf")],
            ("engine", "config", "lang", "size_pt"),
        ),
        "pages": rows,
    }
    print(report(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


def _ints(value: str) -> list[int]:
    return [int(part) for part in value.split(",")]


def report(results: dict[str, Any]) -> str:
    """The results as Markdown."""
    facts = results["facts"]
    out = [f"`{results['command']}`", ""]
    out += [f"- {name}: {version}" for name, version in results["versions"].items()]
    out += [f"- absent: {name}: {reason}" for name, reason in results["absent"].items()]
    out += ["", "## By engine, language and condition", ""]
    out.append(markdown(results["by_condition"], ("engine", "config", "lang", "condition")))
    out += ["", "## By font size (clean and scanned images)", ""]
    out.append(markdown(results["by_size"], ("engine", "config", "lang", "size_pt")))
    out += ["", "## Loads, and the peak memory of a process that reads one page", ""]
    out.append(
        f"(a process that only imports this module peaks at {facts['baseline_peak_rss_mb']} MB)"
    )
    out += ["", "| engine | config | load s | load CPU s | peak RSS, MB |"]
    out.append("|---|---|---|---|---|")
    for load in results["loads"]:
        out.append(
            f"| {load['engine']} | {load['config']} | {load['load_s']:.2f} | "
            f"{load['load_cpu_s']:.2f} | {load['peak_rss_mb']} |"
        )
    out += ["", f"PDF rasterising, s/page by dpi: {facts['raster_s_per_page']}", ""]
    out += ["Text layer (chars, image cover, ms) per page:"]
    out += [f"- {name}: {pages}" for name, pages in facts["text_layer"].items()]
    return "\n".join(out)


if __name__ == "__main__":
    main()
