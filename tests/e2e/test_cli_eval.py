"""`knowhub eval` as a user runs it: a tiny BEIR folder, a golden file, gates, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import knowhub, knowhub_on_terminal, write

KEYS = {"ndcg@10", "recall@10", "recall@100", "mrr@10", "hit_rate@10"}
CORPUS = (
    '{"_id": "d1", "title": "Backups", "text": "Backups run every night at 02:30."}\n'
    '{"_id": "d2", "title": "Vacation", "text": "Staff get 28 days of paid vacation."}\n'
    '{"_id": "d3", "title": "Warranty", "text": "Batteries are covered for 800 cycles."}\n'
    '{"_id": "d4", "title": "Parking", "text": "Visitors park in the north lot."}\n'
)


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    write(folder / "corpus.jsonl", CORPUS)
    write(
        folder / "queries.jsonl",
        '{"_id": "q1", "text": "when do backups run"}\n'
        '{"_id": "q2", "text": "paid vacation days"}\n'
        '{"_id": "q3", "text": "battery warranty cycles"}\n',
    )
    write(
        folder / "qrels" / "test.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t2\n",
    )
    return folder


def test_eval_reports_metrics_writes_files_and_caches_the_ingest(
    beir: Path, tmp_path: Path
) -> None:
    first = knowhub("eval", str(beir), "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert set(summary["metrics"]) >= KEYS and summary["collection"] == "eval-tiny"
    assert "total" in summary["latency_ms"] and summary["ingest"]["added"] == 4
    reports = tmp_path / "data" / "eval" / "reports" / "tiny-test"
    assert Path(summary["report_dir"]).parts == ("data", "eval", "reports", "tiny-test")
    for name in ("report.json", "report.md", "report.html"):
        assert (reports / name).is_file()
    assert len(json.loads((reports / "report.json").read_text())["per_query"]) == 3
    assert len(list((tmp_path / "data" / "eval" / "corpora" / "eval-tiny").glob("*.md"))) == 4
    second = json.loads(knowhub("eval", str(beir), "--json", cwd=tmp_path).stdout)
    assert second["ingest"]["embedded"] == 0 and second["ingest"]["unchanged"] == 4
    assert second["metrics"] == summary["metrics"]


def test_text_output_names_metrics_and_the_report(beir: Path, tmp_path: Path) -> None:
    result = knowhub("eval", str(beir), "--report", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ndcg@10" in result.stdout and "total" in result.stdout
    assert "report: out/report.html" in result.stdout and (tmp_path / "out/report.md").is_file()


def test_gate_exit_status_and_shortfalls(beir: Path, tmp_path: Path) -> None:
    passing = {"KNOWHUB_EVAL__GATES": '{"tiny": {"hit_rate@10": 0.5}}'}
    result = knowhub("eval", str(beir), "--gate", cwd=tmp_path, env=passing)
    assert result.returncode == 0, result.stderr
    assert "gate tiny: passed" in result.stdout
    failing = {"KNOWHUB_EVAL__GATES": '{"eval-tiny": {"ndcg@10": 1.01, "mrr@10": 0.1}}'}
    result = knowhub("eval", str(beir), "--gate", cwd=tmp_path, env=failing)
    assert result.returncode == 1
    assert "gate eval-tiny failed:" in result.stderr
    assert "ndcg@10" in result.stderr and "< 1.010 (-" in result.stderr
    assert "mrr@10" not in result.stderr
    # Without --gate the shortfall is reported but does not fail the run.
    assert knowhub("eval", str(beir), cwd=tmp_path, env=failing).returncode == 0


def test_gate_without_thresholds_is_an_error(beir: Path, tmp_path: Path) -> None:
    result = knowhub("eval", str(beir), "--gate", cwd=tmp_path)
    assert result.returncode == 1
    assert "no gate for 'tiny' or collection 'eval-tiny' in eval.gates" in result.stderr


def test_saved_baseline_is_compared_on_the_next_run(beir: Path, tmp_path: Path) -> None:
    assert knowhub("eval", str(beir), "--save-baseline", cwd=tmp_path).returncode == 0
    assert (tmp_path / "data" / "eval" / "baselines" / "tiny-test.json").is_file()
    summary = json.loads(knowhub("eval", str(beir), "--json", cwd=tmp_path).stdout)
    assert summary["baseline"]["metrics"]["ndcg@10"]["delta"] == 0.0
    assert "vs baseline" in knowhub("eval", str(beir), cwd=tmp_path).stdout


def test_subset_and_limit_pick_a_named_collection(beir: Path, tmp_path: Path) -> None:
    result = knowhub(
        "eval", str(beir), "--limit", "2", "--subset-docs", "3", "--json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["name"], summary["collection"]) == ("tiny@subset", "eval-tiny-subset")
    assert summary["queries"] == 2 and summary["documents"] == 3


def test_golden_file_against_an_ingested_collection(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "en" / "guide.md", "# Guide\n\n## Backups\n\nBackups run at 02:30.\n")
    write(tmp_path / "docs" / "pets.md", "# Pets\n\nDogs are allowed on Fridays.\n")
    assert knowhub("ingest", "docs", "-c", "kb", cwd=tmp_path).returncode == 0
    write(
        tmp_path / "golden.json",
        json.dumps(
            [
                {
                    "query": "when do backups run",
                    "expected_sources": ["en/guide.md"],
                    "expected_keywords": ["02:30", "every hour"],
                },
            ]
        ),
    )
    result = knowhub("eval", "golden.json", "-c", "kb", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["metrics"]["hit_rate@10"] == 1.0 and summary["metrics"]["keyword_recall"] == 0.5
    assert (tmp_path / "data" / "eval" / "reports" / "golden" / "report.html").is_file()


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda f: (f / "queries.jsonl").unlink(), "queries.jsonl: missing"),
        (
            lambda f: write(f / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1 d1 1\n"),
            "test.tsv:2: expected 'query-id<TAB>corpus-id<TAB>score'",
        ),
        (
            lambda f: write(f / "qrels" / "test.tsv", "q1\td1\t1\nq9\td1\t1\n"),
            "test.tsv:2: query 'q9' has no text",
        ),
        (
            lambda f: write(f / "qrels" / "test.tsv", "q1\td1\t0\n"),
            "test.tsv:1: query 'q1' has no judgment above 0",
        ),
    ],
)
def test_broken_data_set_is_a_clear_error(
    beir: Path, tmp_path: Path, breakage: Callable[[Path], object], message: str
) -> None:
    breakage(beir)
    result = knowhub("eval", str(beir), cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: ") and message in result.stderr


def test_bad_golden_file_and_options(tmp_path: Path) -> None:
    write(tmp_path / "golden.json", '[\n  {"query": "x"}\n]\n')
    result = knowhub("eval", "golden.json", cwd=tmp_path)
    assert result.returncode == 1 and "golden.json:2: entry 1 needs exactly one of" in result.stderr
    result = knowhub("eval", "golden.json", "--limit", "3", cwd=tmp_path)
    assert result.returncode == 2 and "apply to BEIR folders only" in result.stderr
    result = knowhub("eval", "missing", cwd=tmp_path)
    assert result.returncode == 1 and "missing: no such file" in result.stderr


def test_progress_bars_for_indexing_and_searching_on_a_terminal_only(
    beir: Path, tmp_path: Path
) -> None:
    status, output = knowhub_on_terminal("eval", str(beir), cwd=tmp_path)
    assert status == 0
    assert "indexing" in output and "searching" in output
    piped = knowhub("eval", str(beir), cwd=tmp_path)
    assert "indexing" not in piped.stderr and "searching" not in piped.stderr
