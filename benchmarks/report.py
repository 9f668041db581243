"""Print Markdown tables from benchmarks/results/*.json (pasted into docs/benchmarks.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
METHODS = ("bm25", "dense", "weighted_0.3", "weighted_0.5", "weighted_0.7", "rrf")


def main() -> None:
    runs = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    if not runs:
        sys.exit(f"no results in {RESULTS}: run `make bench` first")
    print("| data set | embedder | " + " | ".join(METHODS) + " |")
    print("|---|---|" + "---|" * len(METHODS))
    for run in runs:
        cells = [
            f"{run['quality'][m]['ndcg@10']:.3f}" if m in run["quality"] else "–" for m in METHODS
        ]
        print(
            f"| {run['dataset']} ({run['split']}) | {run['provider']} | " + " | ".join(cells) + " |"
        )
    print()
    columns = [
        "data set",
        "embedder",
        "docs",
        "chunks",
        "ingest s",
        "peak RSS MB",
        "re-run s",
        "search p50 ms",
        "p95 ms",
    ]
    print("| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|")
    for run in runs:
        ing, again, lat = run["ingest"], run["reingest"], run["search_ms"]
        cells = [
            run["dataset"],
            run["provider"],
            run["documents"],
            ing["chunks"],
            ing["seconds"],
            ing["peak_rss_mb"],
            again["seconds"],
            lat["p50"],
            lat["p95"],
        ]
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
