"""The real-document answer gate, on a part of its corpus small enough for every run.

``make eval`` asks all of ``benchmarks/realdocs/golden`` over the whole corpus; this test builds
the man pages of that corpus (English, Chinese and Russian, rendered by this machine's man-db
from the Debian packages the builder downloads), ingests them with the default embedder and
asks the golden cases about them — with near misses — through ``knowhub eval --answers
--gate``. The gates are what these pages reach today (:data:`GATES`); the issue's targets,
90 % everywhere, are ``make eval``'s on the whole corpus. The code before issue 37 refused 0
of these near misses and had 8 of 13 answers hold their keywords.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knowhub.config import Settings
from tests.helpers import WAIT_S, knowhub

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "benchmarks" / "realdocs" / "golden"
CACHE = ROOT / ".cache" / "realdocs"
# The cases asked, by id: every one whose expected sources are among these pages, and the
# near misses about them.
SUBSET = [
    *("en-16", "en-17", "en-18", "en-19", "en-20", "near-en-01", "near-en-06"),
    *("zh-09", "zh-10", "zh-11", "zh-14", "near-zh-01", "near-zh-06"),
    *("ru-01", "ru-02", "ru-04", "ru-09", "ru-10", "near-ru-01"),
]


# The default settings: cli_env's hashing embedder is replaced by the default one.
DEFAULTS = {"KNOWHUB_EMBEDDER__PROVIDER": Settings().embedder.provider}
GATES = {
    # 4 of 5 near misses: ripgrep, a lower-case word absent from the pages, is a plain word.
    "realdocs": {"near_miss_refused": 0.8, "answerable_refused": 0.0},
    "realdocs/en": {"source_first": 1.0, "right_place": 1.0, "keywords_present": 1.0},
    "realdocs/zh": {"source_first": 1.0, "right_place": 1.0, "keywords_present": 0.5},
    # Right place 0.5 before keyword entries (nameserver, multi, size=): cited by section.
    "realdocs/ru": {"source_first": 1.0, "right_place": 1.0, "keywords_present": 0.75},
}


def _cases() -> list[dict[str, Any]]:
    found = {
        case["id"]: case
        for path in sorted(GOLDEN.glob("*.json"))
        for case in json.loads(path.read_text(encoding="utf-8"))
    }
    return [found[qid] for qid in SUBSET]


def _pages(cases: list[dict[str, Any]]) -> list[str]:
    return sorted({source for case in cases for source in case.get("expected_sources", [])})


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with the subset's pages ingested as collection ``realdocs``."""
    root = tmp_path_factory.mktemp("realdocs")
    cases = _cases()
    built = subprocess.run(
        [
            *(sys.executable, "-m", "benchmarks.realdocs.build", "--out", str(root / "built")),
            *("--cache", str(CACHE), "--only", ",".join(_pages(cases))),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert built.returncode == 0, built.stderr
    corpus = str(root / "built" / "corpus")
    done = knowhub("ingest", corpus, "-c", "realdocs", cwd=root, env=DEFAULTS)
    assert done.returncode == 0, done.stderr
    (root / "realdocs.json").write_text(json.dumps(cases, ensure_ascii=False), "utf-8")
    return root


def test_the_man_pages_subset_passes_the_real_document_gates(home: Path) -> None:
    env = {**DEFAULTS, "KNOWHUB_EVAL__GATES": json.dumps(GATES)}
    args = ("eval", "--answers", "realdocs.json", "-c", "realdocs", "--gate")
    result = knowhub(*args, cwd=home, env=env)
    report_path = home / "data" / "eval" / "reports" / "realdocs-answers" / "report.json"
    report = json.loads(report_path.read_text("utf-8"))
    shown = json.dumps(report["per_query"], indent=1, ensure_ascii=False)
    assert result.returncode == 0, result.stdout + result.stderr + shown
    assert sorted(report["groups"]) == ["en", "near", "ru", "zh"]
    assert report["gate"]["passed"] and len(report["per_query"]) == len(SUBSET)
