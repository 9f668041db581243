"""BEIR folders become evaluation sets: sampling, subsets, the corpus on disk, bad judgments."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.errors import ConfigError
from knowhub.eval.beir import Dataset, load_dataset
from knowhub.eval.sets import beir_set, sample_dataset
from tests.helpers import write

QRELS_HEADER = "query-id\tcorpus-id\tscore\n"


def make_set(folder: Path, docs: int = 30, queries: int = 10) -> Path:
    write(
        folder / "corpus.jsonl",
        "".join(
            f'{{"_id": "d{i}", "title": "Doc {i}", "text": "text number {i}"}}\n'
            for i in range(docs)
        ),
    )
    write(
        folder / "queries.jsonl",
        "".join(f'{{"_id": "q{i}", "text": "number {i}"}}\n' for i in range(queries)),
    )
    write(
        folder / "qrels" / "test.tsv",
        QRELS_HEADER + "".join(f"q{i}\td{i}\t1\n" for i in range(queries)),
    )
    return folder


def test_sample_is_deterministic_and_keeps_judged_documents(tmp_path: Path) -> None:
    dataset = load_dataset(make_set(tmp_path / "set"))
    first = sample_dataset(dataset, limit=4, subset_docs=12)
    again = sample_dataset(dataset, limit=4, subset_docs=12)
    assert first == again
    assert len(first.qrels) == 4 and len(first.corpus) == 12
    kept = {doc["_id"] for doc in first.corpus}
    assert all(doc in kept for judged in first.qrels.values() for doc in judged)


def test_sample_without_options_is_the_whole_set(tmp_path: Path) -> None:
    dataset = load_dataset(make_set(tmp_path / "set"))
    assert sample_dataset(dataset) == Dataset(
        dataset.name, dataset.corpus, dataset.queries, dataset.qrels
    )


def test_subset_smaller_than_the_judged_documents_is_an_error(tmp_path: Path) -> None:
    dataset = load_dataset(make_set(tmp_path / "set"))
    with pytest.raises(ConfigError, match="--subset-docs 3 is smaller than the 10 documents"):
        sample_dataset(dataset, subset_docs=3)


def test_beir_set_writes_one_file_per_document_and_drops_stale_ones(tmp_path: Path) -> None:
    folder = make_set(tmp_path / "set")
    work = tmp_path / "work"
    full = beir_set(folder, "test", work)
    assert len(list(work.glob("*.md"))) == 30 and full.name == "set" and full.documents == 30
    assert dict(full.queries[0].relevant) == {"d0.md": 1}
    subset = beir_set(folder, "test", work, limit=5, subset_docs=8)
    assert subset.name == "set@subset" and len(subset.queries) == 5
    assert len(list(work.glob("*.md"))) == 8  # files of the bigger corpus are gone


def test_judgment_of_an_unknown_document_names_the_line(tmp_path: Path) -> None:
    folder = make_set(tmp_path / "set", queries=2)
    write(folder / "qrels" / "test.tsv", QRELS_HEADER + "q0\td0\t1\nq1\td99\t1\n")
    with pytest.raises(ConfigError, match=r"test.tsv:3: document 'd99' is not in corpus.jsonl"):
        load_dataset(folder)


def test_query_without_a_positive_judgment_is_an_error(tmp_path: Path) -> None:
    folder = make_set(tmp_path / "set", queries=2)
    write(folder / "qrels" / "test.tsv", QRELS_HEADER + "q0\td0\t1\nq1\td1\t0\nq1\td2\t0\n")
    with pytest.raises(ConfigError, match=r"test.tsv:3: query 'q1' has no judgment above 0"):
        load_dataset(folder)


def test_qrels_without_judgments_is_an_error(tmp_path: Path) -> None:
    folder = make_set(tmp_path / "set", queries=2)
    write(folder / "qrels" / "test.tsv", QRELS_HEADER)
    with pytest.raises(ConfigError, match=r"test.tsv: no judgments"):
        load_dataset(folder)


def test_bad_corpus_line_and_missing_folder(tmp_path: Path) -> None:
    folder = make_set(tmp_path / "set", docs=3, queries=1)
    write(folder / "corpus.jsonl", '{"_id": "d0", "text": "a"}\n{"_id": "d1"}\n')
    with pytest.raises(ConfigError, match=r"corpus.jsonl:2: missing text"):
        load_dataset(folder)
    with pytest.raises(ConfigError, match=r"nowhere: not a folder"):
        load_dataset(tmp_path / "nowhere")
