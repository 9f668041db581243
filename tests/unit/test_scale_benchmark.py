"""`make bench-scale`'s own logic: its rows, and recall that tells exact from broken.

No timing is asserted: the benchmark's numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from benchmarks.scale import main
from benchmarks.scale_corpus import (
    DOC_CHUNKS,
    F32,
    Corpus,
    Truth,
    ensure_corpus,
    exact_truth,
    in_filter,
    load_queries,
    overlap_at_10,
    query_vectors,
    recall_at_10,
)

WORDS = [
    *("protein", "cell", "tumour", "gene", "insulin", "receptor", "mouse", "model", "vaccine"),
    *("immune", "response", "dose", "trial", "patient", "mutation", "kinase", "pathway"),
    *("neuron", "brain", "liver", "heart", "blood"),
]


def fake_beir(folder: Path, docs: int = 60, queries: int = 12) -> Path:
    """A small BEIR folder (corpus, queries, test qrels) of sentences over a few words."""
    rng = np.random.default_rng(7)

    def sentence() -> str:
        return " ".join(str(w) for w in rng.choice(WORDS, size=8)).capitalize() + "."

    folder.mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as out:
        for i in range(docs):
            text = " ".join(sentence() for _ in range(5))
            out.write(json.dumps({"_id": str(i), "title": sentence(), "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w") as out:
        for i in range(queries):
            out.write(json.dumps({"_id": f"q{i}", "text": sentence()}) + "\n")
    (folder / "qrels").mkdir()
    lines = [f"q{i}\t{i}\t1" for i in range(queries)]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(lines))
    return folder


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("scale")
    return fake_beir(root / "beir"), root / "cache"


def test_knowhub_rows_have_every_mode_and_field(small: tuple[Path, Path], tmp_path: Path) -> None:
    dataset, cache = small
    out = tmp_path / "scale.json"
    main(
        [
            "--sizes",
            "2000",
            "--systems",
            "knowhub",
            "--queries",
            "10",
            "--dataset",
            str(dataset),
            "--cache",
            str(cache),
            "--json",
            str(out),
        ]
    )
    rows = json.loads(out.read_text())
    assert [r["mode"] for r in rows] == ["vector", "vector_filter", "hybrid", "hybrid_filter"]
    for row in rows:
        assert {"system", "chunks", "mode", "p50_ms", "p95_ms", "recall_at_10"} <= row.keys()
        assert (row["system"], row["chunks"]) == ("knowhub", 2000)
        assert 0 < row["p50_ms"] <= row["p95_ms"]
        assert 0.0 <= row["recall_at_10"] <= 1.0
        assert row["build_s"] > 0 and row["rss_mb"] > 0 and row["cold_s"] > 0
    assert "| knowhub | 2,000 | hybrid_filter |" in out.with_suffix(".md").read_text()


def test_cached_corpus_serves_smaller_sizes_with_the_same_chunks(small: tuple[Path, Path]) -> None:
    dataset, cache = small
    big = ensure_corpus(cache, dataset, 2000, seed=15)
    part = ensure_corpus(cache, dataset, 500, seed=15)
    assert part.folder == big.folder and part.n == 500
    first = next(part.batches(500))
    assert len(first[1]) == 500 and first[3].shape == (500, 384)
    assert all(400 < len(text) <= 592 for text in first[1])


def _setup(small: tuple[Path, Path]) -> tuple[Corpus, F32, Truth]:
    dataset, cache = small
    corpus = ensure_corpus(cache, dataset, 2000, seed=15)
    queries = query_vectors(load_queries(dataset, 10))
    return corpus, queries, exact_truth(corpus, queries, cache)


def test_exact_answers_have_recall_one_and_broken_ones_less(small: tuple[Path, Path]) -> None:
    corpus, queries, truth = _setup(small)
    for filtered in (False, True):
        ids, _ = truth.of(filtered)
        exact = [list(row[:10]) for row in ids]
        assert recall_at_10(exact, queries, corpus.vectors(), truth, filtered) == 1.0
        worst = [list(row[-10:]) for row in ids]  # ranks 41-50: right filter, wrong chunks
        assert recall_at_10(worst, queries, corpus.vectors(), truth, filtered) < 0.5
        half = [list(row[:5]) + list(row[-5:]) for row in ids]
        assert recall_at_10(half, queries, corpus.vectors(), truth, filtered) < 1.0


def test_a_chunk_outside_the_filter_is_never_found(small: tuple[Path, Path]) -> None:
    corpus, queries, truth = _setup(small)
    unfiltered, _ = truth.of(False)
    outside = [[int(i) for i in row if not in_filter(np.array([i]))[0]][:10] for row in unfiltered]
    assert recall_at_10(outside, queries, corpus.vectors(), truth, True) == 0.0


def test_teams_split_documents_evenly() -> None:
    ids = np.arange(100 * DOC_CHUNKS)
    assert in_filter(ids).mean() == pytest.approx(0.1)


def test_overlap_counts_shared_top_ten() -> None:
    assert overlap_at_10([[1, 2, 3]], [[3, 2, 1]]) == 1.0
    assert overlap_at_10([[1, 2, 9, 8]], [[1, 2, 3, 4]]) == 0.5
