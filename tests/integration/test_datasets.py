"""Lexical quality per language on the shared BEIR sets (KNOWHUB_DATASETS).

The BM25 leg alone must match the baselines measured when the lexical index was chosen (nDCG@10:
xquad-en 0.965, xquad-ru 0.953, xquad-zh 0.957, cmrc2018-zh 0.985): this is what
proves jieba, Snowball and Porter tokenization and the OR query on FTS5.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest

from knowhub import build_app
from knowhub.eval.beir import load_dataset, materialize
from knowhub.eval.metrics import ndcg_at
from tests.helpers import ROOT, fast_settings

DATASETS = Path(os.environ.get("KNOWHUB_DATASETS", ROOT.parent / "shared" / "datasets"))
BASELINES = {"xquad-en": 0.965, "xquad-ru": 0.953, "xquad-zh": 0.957, "cmrc2018-zh": 0.985}


@pytest.mark.datasets
@pytest.mark.parametrize("name", sorted(BASELINES))
def test_bm25_leg_matches_the_measured_baseline(name: str, tmp_path: Path) -> None:
    folder = DATASETS / name
    if not folder.is_dir():
        pytest.skip(f"data set {folder} not present (set KNOWHUB_DATASETS)")
    dataset = load_dataset(folder, "test")
    stems = materialize(dataset.corpus, tmp_path / "files")
    app = build_app(fast_settings(tmp_path / "data", **{"search.dense_weight": 0.0}))
    report = app.collection(name).ingest([tmp_path / "files"])
    assert report.ok and len(report.added) == len(dataset.corpus)
    scores = []
    for qid, judged in dataset.qrels.items():
        hits = app.collection(name).search(dataset.queries[qid], top_k=100).hits
        ranked = list(dict.fromkeys(stems[Path(h.source).stem] for h in hits))
        scores.append(ndcg_at(ranked, judged))
    ndcg = statistics.fmean(scores)
    assert ndcg >= BASELINES[name] - 0.01, f"{name}: BM25 nDCG@10 {ndcg:.4f}"
