"""The runner on a real App (hashing embedder): cached ingest, scoring, latency, bad judgments."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import App
from knowhub.errors import ConfigError
from knowhub.eval.runner import EvalResult, check_judgments, index_corpus, run_queries, score_query
from knowhub.eval.sets import EvalSet, JudgedQuery, beir_set
from knowhub.models import Hit
from knowhub.testing.hits import hit as make_hit
from tests.helpers import write

CORPUS = (
    '{"_id": "d1", "title": "Backups", "text": "Backups run every night at 02:30."}\n'
    '{"_id": "d2", "title": "Vacation", "text": "Staff get 28 days of paid vacation."}\n'
    '{"_id": "d3", "title": "Warranty", "text": "Batteries are covered for 800 cycles."}\n'
)


def tiny_beir(folder: Path) -> Path:
    write(folder / "corpus.jsonl", CORPUS)
    write(
        folder / "queries.jsonl",
        '{"_id": "q1", "text": "when do backups run"}\n'
        '{"_id": "q2", "text": "paid vacation days"}\n',
    )
    write(folder / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return folder


def hit(source: str, chunk_id: str = "c", text: str = "") -> Hit:
    return make_hit(
        text, chunk_id=chunk_id, source=source, char_end=0, doc_hash="h", collection="c"
    )


def test_second_run_embeds_nothing_and_scores_the_same(app: App, tmp_path: Path) -> None:
    evalset = beir_set(tiny_beir(tmp_path / "set"), "test", tmp_path / "work")
    first = index_corpus(app.collection("eval-set"), evalset, "eval-set")
    assert first is not None and first["added"] == 3 and first["embedded"] > 0
    result = run_queries(app.collection("eval-set"), evalset, "eval-set")
    assert result.metrics["hit_rate@10"] == 1.0 and result.metrics["ndcg@10"] > 0.6
    second = index_corpus(app.collection("eval-set"), evalset, "eval-set")
    assert second is not None and second["unchanged"] == 3 and second["embedded"] == 0
    assert run_queries(app.collection("eval-set"), evalset, "eval-set").metrics == result.metrics


def test_latency_has_every_stage_and_a_total(app: App, tmp_path: Path) -> None:
    evalset = beir_set(tiny_beir(tmp_path / "set"), "test", tmp_path / "work")
    index_corpus(app.collection("eval-set"), evalset, "eval-set")
    latency = run_queries(app.collection("eval-set"), evalset, "eval-set").latency_ms
    assert {"lexical", "total"} <= set(latency) and list(latency)[-1] == "total"
    assert all(v["p50"] <= v["p95"] for v in latency.values())


def test_document_ranks_at_its_best_chunk() -> None:
    query = JudgedQuery("q", "x", {"b.md": 1})
    hits = [hit("a.md"), hit("a.md"), hit("b.md"), hit("b.md")]
    result = score_query(query, hits, {"total": 1.0})
    assert result.ranked == ["a.md", "b.md"] and result.first_relevant_rank == 2
    assert result.metrics["mrr@10"] == 0.5


def test_chunk_unit_ranks_chunks_and_keywords_read_the_top_texts() -> None:
    query = JudgedQuery("q", "x", {"c2": 1}, "chunk", ("Every 6 hours", "35 days"))
    hits = [hit("a.md", "c1", "backups every\n6   hours"), hit("a.md", "c2", "nothing")]
    result = score_query(query, hits, {})
    assert result.ranked == ["c1", "c2"] and result.metrics["keyword_recall"] == 0.5


def test_keyword_recall_is_averaged_over_queries_that_have_keywords() -> None:
    with_words = score_query(JudgedQuery("a", "x", {"s": 1}, keywords=("w",)), [hit("s")], {})
    without = score_query(JudgedQuery("b", "x", {"s": 1}), [hit("s")], {})
    result = EvalResult(EvalSet("n", Path("g.json"), []), "c", 100, [with_words, without])
    assert result.metrics["keyword_recall"] == 0.0 and result.metrics["ndcg@10"] == 1.0


def test_expected_source_missing_from_the_collection_is_an_error(app: App, tmp_path: Path) -> None:
    write(tmp_path / "docs" / "en" / "guide.md", "# Guide\n\nBackups run at night.\n")
    app.collection("kb").ingest([tmp_path / "docs"])
    queries = [JudgedQuery("q1", "backups", {"docs/en/guide.md": 1}, line=3)]
    evalset = EvalSet("golden", Path("golden.json"), queries)
    with pytest.raises(
        ConfigError,
        match=r"golden.json:3: query 'q1' expects source "
        r"'docs/en/guide.md', which is not in collection 'kb' \(its sources look "
        r"like 'en/guide.md'\)",
    ):
        check_judgments(app.collection("kb"), evalset, "kb")
    chunked = EvalSet("golden", Path("golden.json"), [JudgedQuery("q", "x", {"nope": 1}, "chunk")])
    with pytest.raises(ConfigError, match="expects chunk 'nope'"):
        check_judgments(app.collection("kb"), chunked, "kb")


def test_top_k_below_ten_is_refused(app: App, tmp_path: Path) -> None:
    evalset = beir_set(tiny_beir(tmp_path / "set"), "test", tmp_path / "work")
    with pytest.raises(ConfigError, match="top_k must be between 10 and 100"):
        run_queries(app.collection("eval-set"), evalset, "eval-set", top_k=5)
