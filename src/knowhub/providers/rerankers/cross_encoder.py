"""A sentence-transformers ``CrossEncoder`` on CPU torch, loaded offline from a folder.

No registry package ships cross-encoder weights that load offline, so the model is
always a local folder saved with ``CrossEncoder.save_pretrained`` (or a Hugging Face
sequence-classification model with one label). Install with
``pip install torch==2.13.0`` (the CPU build) first, then ``pip install 'knowhub[st]'``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.rerankers.base import Reranker

__all__ = ["CrossEncoderReranker", "create"]

MISSING_EXTRA = (
    "reranker 'cross-encoder' needs extra 'st': pip install torch==2.13.0 "
    "&& pip install 'knowhub[st]'"
)


class CrossEncoderReranker(Reranker):
    """Scores each (query, passage) pair jointly; the model loads on first use."""

    def __init__(
        self, model_path: Path, batch_size: int = 16, threads: int = 1, max_length: int = 512
    ) -> None:
        if not Path(model_path).is_dir():
            raise ConfigError(
                f"cross-encoder model folder {str(model_path)!r} not found: set "
                "reranker.cross_encoder.model_path to a saved CrossEncoder folder"
            )
        self.model_path = Path(model_path)
        self.batch_size = batch_size
        self.threads = threads
        self.max_length = max_length
        self.model_id = f"cross-encoder:{self.model_path.name}"
        self._model: Any = None
        self._lock = threading.Lock()  # a search that timed out may still be loading it

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a hub at run time
                try:
                    import torch
                    from sentence_transformers import CrossEncoder
                    from transformers.utils import logging as hf_logging
                except ImportError as exc:
                    raise ConfigError(MISSING_EXTRA) from exc
                # stderr is for our messages, not tqdm bars.
                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                # One thread per worker: two contending threads made one encode 16x slower.
                torch.set_num_threads(self.threads)
                self._model = CrossEncoder(
                    str(self.model_path),
                    device="cpu",
                    local_files_only=True,
                    max_length=self.max_length,
                )
            return self._model

    def warm(self) -> None:
        self._load()

    def _score(self, query: str, texts: list[str]) -> list[float]:
        scores = self._load().predict(
            [(query, text) for text in texts],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        array = np.asarray(scores, dtype=np.float64)
        if array.shape != (len(texts),):
            raise ProviderError(
                f"{self.model_id} gives scores of shape {array.shape}: a reranker needs a "
                "model with one output label"
            )
        return [float(s) for s in array]


def create(settings: Settings) -> CrossEncoderReranker:
    opts = settings.reranker.cross_encoder
    if opts.model_path is None:
        raise ConfigError(
            "reranker 'cross-encoder' needs reranker.cross_encoder.model_path, the folder of "
            "a saved sentence-transformers CrossEncoder"
        )
    return CrossEncoderReranker(opts.model_path, opts.batch_size, opts.threads, opts.max_length)
