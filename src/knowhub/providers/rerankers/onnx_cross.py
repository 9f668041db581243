"""A cross-encoder exported to ONNX, from a local folder (``provider: onnx-cross-encoder``).

A sequence-classification model with one label (``optimum-cli export onnx --task
text-classification``), scoring each (query, passage) pair as the tokenizer's pair
template joins them; no torch. Pairs run side by side on one-thread sessions
(:mod:`knowhub.providers.onnxrun`); the query pipeline's ``reranker.timeout_s`` bounds a
query, and keeps the fused order when the model fails or runs over.
"""

from __future__ import annotations

from pathlib import Path

from knowhub.config import Settings
from knowhub.config.models import OnnxCrossEncoderOptions
from knowhub.errors import ConfigError, ProviderError
from knowhub.providers.local.engine import EngineSpec, OnnxEngine, shared
from knowhub.providers.local.folder import open_folder
from knowhub.providers.rerankers.base import Reranker

__all__ = ["OnnxCrossEncoder", "create"]


class OnnxCrossEncoder(Reranker):
    """Scores (query, passage) pairs with a local ONNX cross-encoder's one logit."""

    def __init__(self, options: OnnxCrossEncoderOptions, cache: Path | None = None) -> None:
        if options.path is None:
            raise ConfigError(
                "reranker 'onnx-cross-encoder' needs reranker.onnx_cross_encoder.path, the "
                "folder of a cross-encoder exported to ONNX (see docs/embedders.md)"
            )
        self.folder = open_folder(options.path, options.file)
        self.max_length = self.folder.length(options.max_length)
        int8 = ":int8" if options.quantize == "int8" else ""
        self.model_id = f"onnx-cross-encoder:{self.folder.root.name}{int8}"
        self.spec = EngineSpec(
            self.folder, self.max_length, options.threads, options.quantize, cache, pairs=True
        )
        self._engine: OnnxEngine | None = None
        self.output = ""

    def load(self) -> OnnxEngine:
        if self._engine is None:
            found = shared(self.spec)
            self.output = "logits" if "logits" in found.outputs else next(iter(found.outputs))
            labels = (found.outputs[self.output] or [None])[-1]
            if isinstance(labels, int) and labels != 1:
                raise ConfigError(
                    f"{self.folder.graph} gives {labels} scores a pair: a reranker needs a "
                    "sequence-classification model with one label (a cross-encoder)"
                )
            self._engine = found
        return self._engine

    def warm(self) -> None:
        self.load()

    def _score(self, query: str, texts: list[str]) -> list[float]:
        found = self.load()
        logits = found.run(found.encode([query] * len(texts), texts), self.output)
        if any(row.shape != (1,) for row in logits):
            raise ProviderError(
                f"{self.model_id} gives {logits[0].shape} scores a pair: a reranker needs a "
                "sequence-classification model with one label"
            )
        return [float(row[0]) for row in logits]


def create(settings: Settings) -> OnnxCrossEncoder:
    cache = Path(settings.data_dir) / "models"
    return OnnxCrossEncoder(settings.reranker.onnx_cross_encoder, cache)
