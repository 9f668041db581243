"""Ingest CPU cost beyond a real embedder: chunks per CPU-second with the hashing embedder.

    python benchmarks/ingest_overhead.py                  # 2,000 scifact abstracts
    python benchmarks/ingest_overhead.py --docs DIR --profile

The hashing embedder is nearly free, so what this measures is the rest of ingest: reading,
loading, chunking, language detection, lexical tokenization and the SQLite writes. Each run
ingests through the real ``App`` into a fresh data dir; CPU time is this process's plus its
children's (embedding worker processes, if any). Without ``--docs`` the first ``--sample``
documents of a BEIR corpus (``$KNOWHUB_DATASETS``, default ``../shared/datasets``) are written
as ``<id>.md`` files into a temporary folder first, outside the timing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

from knowhub import build_app, load_settings
from knowhub.eval.beir import load_dataset, materialize


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (worker pools)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def sample_corpus(dataset: Path, sample: int, folder: Path) -> Path:
    """Write the first ``sample`` documents of a BEIR corpus as files under ``folder``."""
    corpus = load_dataset(dataset).corpus[:sample]
    materialize(corpus, folder)
    return folder


def ingest_once(docs: Path, data_dir: Path, profile: bool) -> dict[str, float]:
    """Ingest ``docs`` into an empty data dir; chunks, CPU and wall seconds."""
    settings = load_settings(
        env={},  # no user config or environment: the defaults, but for the embedder
        overrides={"data_dir": str(data_dir), "embedder.provider": "hashing"},
        cwd=data_dir,
    )
    app = build_app(settings)
    profiler = cProfile.Profile() if profile else None
    cpu, wall = cpu_seconds(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    try:
        report = app.collection("bench").ingest([docs])
    finally:
        if profiler is not None:
            profiler.disable()
        app.close()
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    if not report.ok:
        raise SystemExit(f"ingest failed: {report.failed[:3]}")
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    return {
        "documents": len(report.added),
        "chunks": report.chunks,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "chunks_per_cpu_s": round(report.chunks / cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, help="a folder to ingest (default: a BEIR sample)")
    datasets = Path(os.environ.get("KNOWHUB_DATASETS", "../shared/datasets"))
    parser.add_argument(
        "--dataset",
        type=Path,
        default=datasets / "scifact",
        help="BEIR folder sampled without --docs (%(default)s)",
    )
    parser.add_argument("--sample", type=int, default=2000, help="documents sampled")
    parser.add_argument("--runs", type=int, default=2, help="ingests, each from empty")
    parser.add_argument("--profile", action="store_true", help="cProfile top list to stderr")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="knowhub-overhead-") as tmp:
        docs = args.docs or sample_corpus(args.dataset, args.sample, Path(tmp) / "docs")
        for run in range(args.runs):
            result = ingest_once(docs, Path(tmp) / f"data-{run}", args.profile and run == 0)
            print(json.dumps({"run": run + 1, **result}), flush=True)


if __name__ == "__main__":
    main()
