from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.errors import ConfigError
from knowhub.eval.beir import load_dataset, materialize
from knowhub.eval.metrics import mrr_at, ndcg_at, recall_at


def make(folder: Path, qrels: str = "query-id\tcorpus-id\tscore\nq1\td1\t1\n") -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "T", "text": "alpha"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "alpha?"}\n')
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return folder


def test_loads_a_beir_folder(tmp_path: Path) -> None:
    dataset = load_dataset(make(tmp_path / "set"))
    assert dataset.qrels == {"q1": {"d1": 1}} and dataset.queries == {"q1": "alpha?"}


def test_malformed_qrels_line_names_file_and_line(tmp_path: Path) -> None:
    folder = make(tmp_path / "set", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2 d2 1\n")
    with pytest.raises(ConfigError, match=r"test.tsv:3: expected"):
        load_dataset(folder)


def test_judged_query_without_text_is_an_error(tmp_path: Path) -> None:
    folder = make(tmp_path / "set", "query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(ConfigError, match="query 'q9' has no text"):
        load_dataset(folder)


def test_missing_file_and_missing_split(tmp_path: Path) -> None:
    folder = make(tmp_path / "set")
    with pytest.raises(ConfigError, match=r"train.tsv: missing"):
        load_dataset(folder, "train")
    (folder / "corpus.jsonl").unlink()
    with pytest.raises(ConfigError, match=r"corpus.jsonl: missing"):
        load_dataset(folder)


def test_materialize_writes_title_heading_once(tmp_path: Path) -> None:
    stems = materialize([{"_id": "a/b", "title": "Title", "text": "Body"}], tmp_path)
    assert stems == {"a_b": "a/b"}
    path = tmp_path / "a_b.md"
    assert path.read_text() == "# Title\n\nBody\n"
    mtime = path.stat().st_mtime_ns
    materialize([{"_id": "a/b", "title": "Title", "text": "Body"}], tmp_path)
    assert path.stat().st_mtime_ns == mtime  # unchanged files keep their mtime


def test_metrics_match_hand_worked_values() -> None:
    relevant = {"a": 1, "c": 2}
    ranked = ["b", "a", "c"]
    # DCG = 1/log2(3) + 2/log2(4); IDCG = 2/log2(2) + 1/log2(3)
    expected = (1 / 1.5849625 + 2 / 2) / (2 / 1 + 1 / 1.5849625)
    assert ndcg_at(ranked, relevant) == pytest.approx(expected, rel=1e-6)
    assert recall_at(ranked, relevant, 2) == 0.5
    assert mrr_at(ranked, relevant) == 0.5
    assert ndcg_at([], {}) == 0.0
