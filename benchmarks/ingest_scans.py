"""What scans and pictures cost at ingest, end to end (issue 20): the real `knowhub ingest`.

    python -m benchmarks.ingest_scans [--pages 10] [--runs 3] [--out FILE] [--keep DIR]
                                      [--configs default,hashing,...]

A seeded corpus (benchmarks/ingest_corpus.py) in a temporary folder: per language (en, zh,
ru) a scanned PDF of ``--pages`` pages (11 pt, scanned at 200 dpi: skew, blur, grey paper,
noise, JPEG), the same pages as a text PDF, and one scanned page as a PNG; a Word file and a
PDF with 10 pictures each (3 charts and 2 screenshots with text, 5 photos without). Scanned
and text pages have a running header and a "Page N of M" footer, for cleanup to remove.

Each kind of file is ingested by its own `knowhub ingest` child process into an empty data
dir, in each configuration (``CONFIGS``): ``default`` settings; the ``hashing`` embedder (near
free, so what is left is loading, OCR, pictures, cleanup, chunking and SQLite); that with OCR
off (``hashing-ocr-off``), and with pictures off (``hashing-pictures-off``); and a re-ingest
of the ``hashing`` data dir after every file was touched, mtime changed, content not
(``hashing-reingest``). Reported per kind and configuration, median of
``--runs``: wall seconds (the child's whole life: Python start, imports, model loads), pages
per second, CPU seconds (the child and its worker processes), the child's peak RSS (the
largest single process of its tree: ``ru_maxrss`` from ``wait4``), chunks, and read back from
the store through knowhub's own API: the character error rate of the indexed text against
the pages' bodies (benchmarks/ocr.py's normalisation and Levenshtein; chunks put back
together by their character offsets, picture blocks left out), the header and footer lines
cleanup left, and for picture documents how many pictures were kept and described, and what
share of the words drawn in them the descriptions hold. CER is given twice: of all the
indexed text, and without the header and footer lines cleanup left (found as OCR misread
them, within a few edits): OCR's errors apart from cleanup's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.ingest_corpus import HEADER, Corpus, build
from benchmarks.ocr import levenshtein, normalise

# name → (environment, kinds run; None: every kind). Each starts from an empty data dir but
# the re-ingest, which reuses the `hashing` one.
HASHING = {"KNOWHUB_EMBEDDER__PROVIDER": "hashing"}
_OCR_KINDS = ("scan-en", "scan-zh", "scan-ru", "png", "pictures-docx", "pictures-pdf")
CONFIGS: dict[str, tuple[dict[str, str], tuple[str, ...] | None]] = {
    "default": ({}, None),
    "hashing": (HASHING, None),
    "hashing-ocr-off": (HASHING | {"KNOWHUB_INGEST__OCR": "false"}, _OCR_KINDS),
    "hashing-pictures-off": (
        HASHING | {"KNOWHUB_INGEST__IMAGES__EXTRACT": "false"},
        ("pictures-docx", "pictures-pdf"),
    ),
    "hashing-reingest": (HASHING, None),  # the `hashing` data dir again, files touched
}
REINGEST = "hashing-reingest"
COLLECTION = "bench"
# The peak memory of a child is read by /usr/bin/time, not from wait4: Linux starts a
# process's ru_maxrss at the RSS of the process it was forked from (exec keeps the old
# mm's high-water mark), so every child of this process would report at least this
# process's own ~200 MB. /usr/bin/time's child is forked from a small process.
TIME = "/usr/bin/time"
_IMAGE_BLOCK = re.compile(r"\[Image: [^\]]*\]")
_DIGITS = re.compile(r"\d+")


@dataclass
class Run:
    """One `knowhub ingest` child: its exit status, report and costs."""

    rc: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    report: dict[str, Any]
    stderr: str


def ingest(folder: Path, data_dir: Path, env: dict[str, str]) -> Run:
    """`knowhub ingest --json` of ``folder`` in a child process, measured by ``wait4``."""
    err, rss = (data_dir.parent / f"{data_dir.name}.{ext}" for ext in ("stderr", "rss"))
    command = [sys.executable, "-m", "knowhub", "--data-dir", str(data_dir), "ingest"]
    command += ["--json", "-c", COLLECTION, str(folder)]
    if Path(TIME).is_file():
        command = [TIME, "-f", "%M", "-o", str(rss), *command]
    start = time.perf_counter()
    with err.open("w") as stderr:
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=data_dir.parent
        )
        assert child.stdout is not None
        out = child.stdout.read()
        # wait4, not wait: the child's own CPU (its waited-for workers included), where
        # RUSAGE_CHILDREN would sum every run before it.
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    try:
        report = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        report = {"unparsed": out.decode(errors="replace")[-2000:]}
    return Run(
        child.returncode,
        wall,
        usage.ru_utime + usage.ru_stime,
        _peak_mb(rss, usage.ru_maxrss),
        report,
        err.read_text(errors="replace")[-4000:],
    )


def _peak_mb(rss: Path, fallback_kb: int) -> float:
    """The peak /usr/bin/time measured, else ``wait4``'s (an upper bound: see ``TIME``)."""
    if rss.is_file():
        lines = rss.read_text().split()
        if lines and lines[-1].isdigit():
            return int(lines[-1]) / 1024
    return fallback_kb / 1024


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """This environment without any KNOWHUB_ setting of the user's, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_src(), env.get("PYTHONPATH", "")]))
    return env | extra


def _src() -> str:
    import knowhub

    return str(Path(knowhub.__file__).resolve().parents[1])


# --- what was indexed ------------------------------------------------------------------------


def document_text(chunks: list[tuple[int, int, str]]) -> str:
    """A document's text put back together from its chunks ``(char_start, char_end, text)``:
    overlaps written once, a gap (text no chunk holds) as a blank line."""
    out: list[str] = []
    end = 0
    for start, stop, text in sorted(chunks):
        if stop <= end:
            continue
        if start >= end:
            if out:
                out.append("\n\n")
            out.append(text)
        else:
            out.append(text[end - start :])
        end = stop
    return "".join(out)


def cer(truth: str, got: str, lang: str) -> tuple[int, int]:
    """Edit distance and reference length, on text normalised as benchmarks/ocr.py does."""
    reference = normalise(truth, lang)
    return levenshtein(reference, normalise(got, lang)), len(reference)


def file_lang(name: str) -> str:
    """``scan-zh.pdf`` → ``zh``."""
    return name.split(".")[0].rsplit("-", 1)[-1]


def read_back(data_dir: Path, env: dict[str, str], corpus: Corpus) -> dict[str, dict[str, Any]]:
    """Per file name: its chunks, text CER against the truth, furniture left, pictures."""
    from knowhub import build_app, load_settings

    settings = load_settings(env=env, overrides={"data_dir": str(data_dir)}, cwd=data_dir.parent)
    app = build_app(settings)
    try:
        out = {}
        for record in app.collection(COLLECTION).documents():
            hits = app.collection(record.collection).document_chunks(record)
            name = Path(record.path).name
            text = document_text([(h.char_start, h.char_end, h.text) for h in hits])
            out[name] = _scores(name, text, record.metadata, corpus)
            out[name] |= {"chunks": len(hits), "pages": record.pages, "text": text}
        return out
    finally:
        app.close()


def _scores(name: str, text: str, metadata: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    row: dict[str, Any] = {}
    if name in corpus.truth:
        row |= _text_scores(_IMAGE_BLOCK.sub("", text), corpus.truth[name], file_lang(name))
    images = metadata.get("knowhub", {}).get("images", [])
    if images or name in corpus.picture_words:
        described = [i for i in images if i.get("description")]
        row |= {"pictures": len(images), "described": len(described)}
        said = " ".join(i["description"] for i in described).casefold()
        words = corpus.picture_words.get(name, [])
        row["words_found"] = sum(word.casefold() in said for word in words)
        row["words"] = len(words)
    return row


def _text_scores(body: str, pages: list[str], lang: str) -> dict[str, Any]:
    """CER of the indexed text, the header and footer lines cleanup left (as OCR misread
    them too), and the CER without those lines: what OCR got wrong, apart from cleanup."""
    lines = body.split("\n")
    headers = [line for line in lines if _is_header(line)]
    footers = [line for line in lines if _is_footer(line)]
    rest = "\n".join(line for line in lines if not (_is_header(line) or _is_footer(line)))
    truth = "\n\n".join(pages)
    dist, ref = cer(truth, body, lang)
    return {"dist": dist, "ref": ref, "dist_body": cer(truth, rest, lang)[0]} | {
        "headers_left": len(headers),
        "footers_left": len(footers),
    }


def _is_header(line: str) -> bool:
    """The running header, read right or nearly ("ACME Dperations Handbcok")."""
    line = line.strip(" :;.,'\"").casefold()
    return abs(len(line) - len(HEADER)) <= 6 and levenshtein(line, HEADER.casefold()) <= 6


def _is_footer(line: str) -> bool:
    """The footer ("Page 3 of 10"), read right or nearly ("Раде 3 of 10", "Page4ocf 10")."""
    line = line.strip(" :;.,'\"°").casefold()
    return len(line) <= 24 and levenshtein(_DIGITS.sub("#", line), "page # of #") <= 5


# --- the matrix ------------------------------------------------------------------------------


def run_matrix(corpus: Corpus, work: Path, runs: int, configs: list[str]) -> list[dict[str, Any]]:
    """The configurations' kinds, ``runs`` times each; a row per (config, kind, run)."""
    rows = []
    for run in range(1, runs + 1):
        for config in configs:
            extra, kinds = CONFIGS[config]
            env = child_env(extra)
            for kind, paths in corpus.kinds.items():
                if kinds is not None and kind not in kinds:
                    continue
                folder = paths[0].parent
                rows.append(_one(corpus, work, (config, kind, run), folder, env))
                print(json.dumps(_brief(rows[-1])), file=sys.stderr, flush=True)
    return rows


def _one(
    corpus: Corpus, work: Path, key: tuple[str, str, int], folder: Path, env: dict[str, str]
) -> dict[str, Any]:
    config, kind, run = key
    if config == REINGEST:
        data_dir = work / f"hashing-{kind}-{run}"
        for path in corpus.kinds[kind]:
            path.touch()
    else:
        data_dir = work / f"{config}-{kind}-{run}"
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
    result = ingest(folder, data_dir, env)
    row: dict[str, Any] = {"config": config, "kind": kind, "run": run, "rc": result.rc}
    row |= {"wall_s": result.wall_s, "cpu_s": result.cpu_s, "peak_rss_mb": result.peak_rss_mb}
    row |= {"units": corpus.pages[kind], "report": _report_counts(result.report)}
    if result.rc != 0:
        row["stderr"] = result.stderr
    if run == 1:  # the text indexed is the same each run (seeded, deterministic OCR)
        row["files"] = read_back(data_dir, env, corpus)
    return row


def _report_counts(report: dict[str, Any]) -> dict[str, Any]:
    """The ingest report's counts and messages, not its per-file lists of names."""
    out: dict[str, Any] = {}
    for key, value in report.items():
        if isinstance(value, list):
            out[key] = len(value) if key not in ("failed", "skipped", "warnings") else value[:6]
        elif not isinstance(value, dict):
            out[key] = value
    return out


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    keep = ("config", "kind", "run", "rc", "wall_s", "cpu_s", "peak_rss_mb")
    return {k: round(row[k], 2) if isinstance(row[k], float) else row[k] for k in keep}


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (config, kind): medians over runs, and run 1's quality figures summed over files."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["config"], row["kind"]), []).append(row)
    out = []
    for (config, kind), members in groups.items():
        first = next(r for r in members if r["run"] == 1)
        wall = statistics.median(r["wall_s"] for r in members)
        summary = {"config": config, "kind": kind, "runs": len(members), "rc": first["rc"]}
        summary |= {"wall_s": round(wall, 2), "units": first["units"]}
        summary["units_per_s"] = round(first["units"] / wall, 2)
        summary["cpu_s"] = round(statistics.median(r["cpu_s"] for r in members), 2)
        summary["peak_rss_mb"] = round(statistics.median(r["peak_rss_mb"] for r in members))
        summary["wall_range"] = [round(min(r["wall_s"] for r in members), 2)]
        summary["wall_range"].append(round(max(r["wall_s"] for r in members), 2))
        out.append(summary | _quality(first.get("files", {})) | {"report": first["report"]})
    return out


def _quality(files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The files' figures summed: chunks, CER, furniture and pictures."""
    rows = list(files.values())
    out: dict[str, Any] = {"chunks": sum(r["chunks"] for r in rows)}
    for key in ("headers_left", "footers_left", "pictures", "described", "words_found", "words"):
        if any(key in r for r in rows):
            out[key] = sum(r.get(key, 0) for r in rows)
    if any("ref" in r for r in rows):
        ref = sum(r["ref"] for r in rows)
        out["cer"] = round(sum(r["dist"] for r in rows) / ref, 4)
        out["cer_body"] = round(sum(r["dist_body"] for r in rows) / ref, 4)
    return out


# --- the report ------------------------------------------------------------------------------

_UNIT = {"pictures-docx": "pictures", "pictures-pdf": "pictures", "png": "images"}


def markdown(summary: list[dict[str, Any]]) -> str:
    """The summary as a Markdown table."""
    head = ["configuration", "kind", "units", "wall s (min-max)", "units/s", "CPU s"]
    head += ["peak RSS MB", "chunks", "CER %", "CER % w/o furniture", "furniture left"]
    head += ["pictures described", "words"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary:
        low, high = row["wall_range"]
        cells = [row["config"], row["kind"], f"{row['units']} {_UNIT.get(row['kind'], 'pages')}"]
        cells += [f"{row['wall_s']:.1f} ({low:.1f}-{high:.1f})", f"{row['units_per_s']:.2f}"]
        cells += [f"{row['cpu_s']:.1f}", str(row["peak_rss_mb"]), _chunks(row)]
        cells.append(f"{row['cer'] * 100:.1f}" if "cer" in row else "")
        cells.append(f"{row['cer_body'] * 100:.1f}" if "cer_body" in row else "")
        furniture = row.get("headers_left", 0) + row.get("footers_left", 0)
        cells.append(str(furniture) if "headers_left" in row else "")
        cells.append(f"{row['described']}/{row['pictures']}" if "pictures" in row else "")
        cells.append(f"{row['words_found']}/{row['words']}" if row.get("words") else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _chunks(row: dict[str, Any]) -> str:
    if row["rc"] != 0:
        return f"{row['chunks']} (exit {row['rc']})"
    return str(row["chunks"])


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10, help="pages per scanned PDF")
    parser.add_argument("--runs", type=int, default=3, help="repeats; medians reported")
    parser.add_argument("--out", type=Path, help="also write every number (JSON) here")
    parser.add_argument("--keep", type=Path, help="work here (corpus, data dirs), kept after")
    parser.add_argument(
        "--configs",
        type=_configs,
        default=list(CONFIGS),
        help=f"comma-separated, of {', '.join(CONFIGS)} ({REINGEST} needs hashing before it)",
    )
    args = parser.parse_args()
    info = machine()
    with tempfile.TemporaryDirectory(prefix="knowhub-ingest-scans-") as tmp:
        work = args.keep or Path(tmp)
        start = time.perf_counter()
        corpus = build(work / "corpus", args.pages)
        print(f"corpus in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        rows = run_matrix(corpus, work / "runs", args.runs, args.configs)
    info["load_after"] = [round(x, 2) for x in os.getloadavg()]
    summary = summarise(rows)
    command = "python -m benchmarks.ingest_scans " + " ".join(sys.argv[1:])
    print(f"`{command}`\n\n{json.dumps(info)}\n\n{markdown(summary)}")
    if args.out:
        results = {"command": command, "machine": info, "summary": summary, "rows": rows}
        args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


def _configs(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",")]
    unknown = [name for name in names if name not in CONFIGS]
    if unknown or (REINGEST in names and "hashing" not in names[: names.index(REINGEST)]):
        raise argparse.ArgumentTypeError(
            f"{value!r}: name some of {', '.join(CONFIGS)}; {REINGEST} only after hashing"
        )
    return names


if __name__ == "__main__":
    main()
