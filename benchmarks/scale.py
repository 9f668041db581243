"""Search at scale, side by side: knowhub, LanceDB, Chroma and qdrant (local) on one corpus.

    python -m benchmarks.scale                       # 10k and 100k chunks (make bench-scale)
    python -m benchmarks.scale --sizes 1000000 --systems knowhub,lancedb

Every system gets the same N chunks (scifact sentences, ~592 characters, 384-d hashing
vectors, ``team`` t0..t9; see ``scale_corpus``), the same ~200 scifact test queries and query
vectors, and is built and searched in a process of its own, so its build time and peak RSS
are its own. Per mode (``vector``, ``vector_filter``, ``hybrid``, ``hybrid_filter``; filter
``team = t3``, a tenth of the chunks): CPU ms per query (``time.process_time`` around one
search call: every thread of the process) and wall ms, p50 and p95 after one warm-up query,
the query embedding excluded; recall@10 of dense modes against exact search over the same
vectors (filter applied), and for knowhub's hybrid modes against the same fusion over an
exact dense leg (what an ANN index costs). Then a fresh process's first search (cold open).

Writes ``benchmarks/results/scale.json`` (rows ``system, chunks, mode, p50_ms, p95_ms,
recall_at_10`` — p50/p95 are CPU — plus ``wall_p50_ms, wall_p95_ms, build_s, rss_mb,
cold_s``) and ``scale.md``, the table of docs/benchmarks.md, with knowhub's CPU p50 over the
best peer's on each knowhub row. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.scale_corpus import (
    Corpus,
    dump,
    ensure_corpus,
    exact_truth,
    load_queries,
    log,
    overlap_at_10,
    peak_rss_mb,
    percentiles,
    query_vectors,
    recall_at_10,
)

SYSTEMS = ("knowhub", "lancedb", "chroma", "qdrant")
MODES = ("vector", "vector_filter", "hybrid", "hybrid_filter")
ROOT = Path(__file__).resolve().parent.parent
# Lance's Rust log says this on every query that selects columns without its scores, and
# neither its Python API nor an environment variable turns it off.
_NOISE = "Deprecation warning, this behavior will change in the future"


def options(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts (%(default)s)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="%(default)s")
    parser.add_argument("--queries", type=int, default=200, help="scifact test queries")
    parser.add_argument("--seed", type=int, default=15, help="the corpus draw's seed")
    datasets = Path(os.environ.get("KNOWHUB_DATASETS", "../shared/datasets"))
    parser.add_argument("--dataset", type=Path, default=datasets / "scifact")
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-scale")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/scale.json")
    parser.add_argument(
        "--qdrant-max",
        type=int,
        default=10_000,
        help="largest N qdrant's local mode runs at: it filters in Python, "
        "~0.06 ms a chunk per query (%(default)s)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the built collections")
    parser.add_argument(
        "--ef-sweep",
        default="",
        help="knowhub only, for collections with an HNSW graph: store.sqlite.ann_ef_search "
        "values to measure every mode at too (e.g. 512,1024; default: none); rows show the "
        "efSearch each comes to at the size",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one system, in this process
    parser.add_argument("--chunks", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = options(argv)
    if args.worker:
        worker(args)
        return []
    rows: list[dict[str, Any]] = []
    for n in (int(s) for s in args.sizes.split(",")):
        rows.extend(run_size(args, n))
        write(args.json, rows)  # after each size: a long run leaves what it measured
    print(table(rows))
    return rows


def inputs(args: argparse.Namespace, n: int) -> tuple[Corpus, list[str], Any, Any]:
    """The corpus, queries, query vectors and exact neighbours (cached after the first run)."""
    corpus = ensure_corpus(args.cache, args.dataset, n, args.seed)
    queries = load_queries(args.dataset, args.queries)
    vectors = query_vectors(queries)
    return corpus, queries, vectors, exact_truth(corpus, vectors, args.cache)


def run_size(args: argparse.Namespace, n: int) -> list[dict[str, Any]]:
    corpus, queries, vectors, truth = inputs(args, n)
    rows: list[dict[str, Any]] = []
    for system in args.systems.split(","):
        if system == "qdrant" and n > args.qdrant_max:
            log(f"qdrant skipped at {n:,} chunks (--qdrant-max {args.qdrant_max:,})")
            continue
        folder = args.cache / "work" / f"{system}-{n}"
        shutil.rmtree(folder, ignore_errors=True)
        result = spawn_worker(args, system, n, folder)
        if result is not None:
            result["cold_s"] = cold_open(system, folder, queries[0], vectors[0])
            rows.extend(rows_of(result, vectors, corpus, truth))
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def spawn_worker(
    args: argparse.Namespace, system: str, n: int, folder: Path
) -> dict[str, Any] | None:
    out = args.cache / "work" / f"{system}-{n}.json"
    command = [
        sys.executable,
        "-m",
        "benchmarks.scale",
        "--worker",
        system,
        "--chunks",
        str(n),
        "--out",
        str(out),
        "--queries",
        str(args.queries),
        "--seed",
        str(args.seed),
        "--dataset",
        str(args.dataset),
        "--cache",
        str(args.cache),
        "--ef-sweep",
        args.ef_sweep,
    ]
    log(f"{system} at {n:,} chunks")
    with subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True) as child:
        assert child.stderr is not None
        for line in child.stderr:
            if _NOISE not in line:
                sys.stderr.write(line)
    if child.returncode != 0:
        log(f"{system} at {n:,} chunks failed (exit {child.returncode}): left out")
        return None
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def worker(args: argparse.Namespace) -> None:
    """Build one system's collection and time its searches, in this (fresh) process."""
    corpus, queries, vectors, truth = inputs(args, args.chunks)
    folder = args.cache / "work" / f"{args.worker}-{args.chunks}"
    build, measure = _system(args)
    cpu, wall = time.process_time(), time.perf_counter()
    handle = build(folder, corpus)
    build_s, build_cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    log(f"  {args.worker} built in {build_s:.1f} s")
    modes = measure(handle, queries, vectors, truth)
    sweep = modes.pop("ef_sweep", [])
    dump(
        args.out,
        {
            "system": args.worker,
            "chunks": args.chunks,
            "build_s": round(build_s, 2),
            "build_cpu_s": round(build_cpu_s, 2),
            "rss_mb": peak_rss_mb(),
            "modes": modes,
            "ef_sweep": sweep,
        },
    )


def _system(args: argparse.Namespace) -> tuple[Callable[[Path, Corpus], Any], Callable[..., Any]]:
    name = args.worker
    if name == "knowhub":
        from benchmarks import scale_knowhub

        sweep = [int(ef) for ef in args.ef_sweep.split(",") if ef]
        return scale_knowhub.build, partial(scale_knowhub.measure, ef_sweep=sweep)
    from benchmarks import scale_peers

    build, measure = {
        "lancedb": (scale_peers.lance_build, scale_peers.lance_measure),
        "chroma": (scale_peers.chroma_build, scale_peers.chroma_measure),
        "qdrant": (scale_peers.qdrant_build, scale_peers.qdrant_measure),
    }[name]
    return build, lambda handle, queries, vectors, truth: measure(handle, queries, vectors)


def cold_open(system: str, folder: Path, query: str, vector: Any) -> float | None:
    """Wall seconds for a fresh process to start, open ``folder`` and answer one search."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scale_cold", system, str(folder)],
        cwd=ROOT,
        input=json.dumps({"query": query, "vector": vector.tolist()}),
        text=True,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        log(f"{system}: cold open failed: {done.stderr.strip()[-300:]}")
        return None
    seconds = round(time.perf_counter() - started, 3)
    log(f"  {system} cold open: {seconds} s")
    return seconds


def rows_of(
    result: dict[str, Any], queries: Any, corpus: Corpus, truth: Any
) -> list[dict[str, Any]]:
    """One JSON row per mode the system ran: CPU and wall percentiles, recall, and the
    system's build time, peak RSS and cold open."""
    vectors = corpus.vectors()
    rows = []
    measured = [(m, result["modes"]) for m in MODES if m in result["modes"]]
    for sweep in result.get("ef_sweep", []):
        measured += [(m, sweep["modes"]) for m in MODES if m in sweep["modes"]]
    for mode, modes in measured:
        got = modes[mode]
        filtered = mode.endswith("_filter")
        if mode.startswith("vector"):
            recall: float | None = recall_at_10(got["ids"], queries, vectors, truth, filtered)
        else:
            recall = overlap_at_10(got["ids"], got["ref_ids"]) if "ref_ids" in got else None
        cpu, wall = percentiles(got["cpu_ms"]), percentiles(got["wall_ms"])
        rows.append(
            {
                "system": result["system"],
                "chunks": result["chunks"],
                "mode": mode,
                "p50_ms": cpu["p50"],
                "p95_ms": cpu["p95"],
                "recall_at_10": None if recall is None else round(recall, 4),
                "wall_p50_ms": wall["p50"],
                "wall_p95_ms": wall["p95"],
                "timing": "cpu",
                "build_s": result["build_s"],
                "rss_mb": result["rss_mb"],
                "cold_s": result.get("cold_s"),
                "ann_ef_search": modes.get("ann_ef_search"),
            }
        )
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The Markdown table: one line per row, knowhub's lines with its ratio to the best
    peer (lowest CPU p50 of the same size and mode)."""
    head = (
        "| system | chunks | mode | CPU p50 (ms) | CPU p95 (ms) | wall p50 (ms) | "
        "recall@10 | build (s) | peak RSS (MB) | cold open (s) | knowhub / best peer |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for row in rows:
        peers = [
            r["p50_ms"]
            for r in rows
            if r["system"] != "knowhub" and (r["chunks"], r["mode"]) == (row["chunks"], row["mode"])
        ]
        ratio = ""
        if row["system"] == "knowhub" and peers and min(peers) > 0:
            ratio = f"{row['p50_ms'] / min(peers):.2f}×"
        recall = "–" if row["recall_at_10"] is None else f"{row['recall_at_10']:.3f}"
        ef = row.get("ann_ef_search")
        mode = f"{row['mode']} (efSearch {ef})" if ef else row["mode"]
        lines.append(
            f"| {row['system']} | {row['chunks']:,} | {mode} | {row['p50_ms']:.2f}"
            f" | {row['p95_ms']:.2f} | {row['wall_p50_ms']:.2f} | {recall} | "
            f"{row['build_s']:.1f} | {row['rss_mb']:,.0f} | {row['cold_s'] or '–'} | "
            f"{ratio} |"
        )
    return "\n".join(lines)


def write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    dump(path, list(rows))
    path.with_suffix(".md").write_text(table(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
