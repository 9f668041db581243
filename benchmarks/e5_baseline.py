"""The E5 engine as it ran before issue 41, kept to be measured beside today's.

Graph ``int8-v1`` (:mod:`knowhub.providers.embedders.e5.graph_v1`), or its layout with
``MatMulNBits`` products for exact mode, ONNX Runtime's default fusions
(SkipLayerNormalization included), windows batched under a key mask in runs of at most 384
padded tokens, one session spreading each run over every thread: what ``mode: int8`` and
``mode: exact`` were.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.embedders.e5 import graph_v1
from knowhub.providers.embedders.e5.engine import windows
from knowhub.providers.embedders.e5.graph import nbits
from knowhub.providers.embedders.e5.tokenizer import E5Tokenizer
from knowhub.providers.embedders.e5.weights import Lookup, default_path, load

__all__ = ["Baseline"]

_BUDGET = 384  # padded tokens per run, as before


def _exact_linear(g: Any, w: Any, name: str, x: str) -> str:
    y = nbits(g, x, w.q4(name + ".w"))  # accuracy_level 4, as before
    return g.op("Add", [y, g.const(w.f32(name + ".b"))])


def _graph(weights: Any, mode: str) -> bytes:
    if mode == "int8":
        return graph_v1.build(weights)
    linear = graph_v1._linear
    graph_v1._linear = _exact_linear  # type: ignore[assignment]
    try:
        return graph_v1.build(weights)
    finally:
        graph_v1._linear = linear


class Baseline(Embedder):
    model_id = "baseline"
    dim = 384
    languages = None
    cross_lingual = True
    parallel = False

    def __init__(self, mode: str, threads: int = 1, profile: str | None = None) -> None:
        self.mode, self.threads, self._profile = mode, threads, profile
        self._session: Any = None

    def _load(self) -> None:
        import onnxruntime as ort

        weights = load(default_path())
        self.tokenizer = E5Tokenizer(weights, None)
        self._lookup = Lookup(weights)
        self._window = weights.positions - 2
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        if self._profile:
            options.enable_profiling = True
            options.profile_file_prefix = self._profile
        self._session = ort.InferenceSession(
            _graph(weights, self.mode),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["MatMulIntegerToFloatFusion"],
        )

    @property
    def session(self) -> Any:
        if self._session is None:
            self._load()
        return self._session

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        session = self.session
        prefix = "query: " if is_query else "passage: "
        content = self.tokenizer.encode([prefix + text for text in texts])
        cut = windows(content, self._window)
        sums = np.zeros((len(texts), self.dim))
        order = sorted(range(len(cut)), key=lambda i: len(cut[i][1]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * (len(cut[order[end]][1]) + 2) <= (
                _BUDGET
            ):
                end += 1
            chosen = [cut[i] for i in order[start:end]]
            length = max(len(ids) for _, ids in chosen) + 2
            embeddings = np.zeros((len(chosen), length, self.dim), np.float32)
            mask = np.zeros((len(chosen), length), np.float32)
            for i, (_, ids) in enumerate(chosen):
                embeddings[i, : len(ids) + 2] = self._lookup.window(ids)[0]
                mask[i, : len(ids) + 2] = 1.0
            (pooled,) = session.run(["pooled"], {"embeddings": embeddings, "mask": mask})
            for (row, ids), vector in zip(chosen, pooled, strict=True):
                sums[row] += max(len(ids), 1) * vector
            start = end
        return (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(np.float32)
