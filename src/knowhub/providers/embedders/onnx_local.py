"""Any sentence-embedding model exported to ONNX, from a local folder (``provider: onnx``).

The folder (see :mod:`knowhub.providers.local.folder`) says how to pool (its own
``sentence_embedding`` output, or sentence-transformers' pooling file: mean, CLS or last
token), which prompts go before queries and passages, and how many tokens a text may
have; ``embedder.onnx`` in knowhub.yaml overrides any of it, and ``dim`` keeps only the
first dimensions of a Matryoshka model, and ``quantize: int8`` runs it with int8
products. Vectors are L2-normalised, as every knowhub
embedder's (search ranks by cosine). The id records the folder's content hash and those
settings: another model, or the same one pooled or prompted otherwise, is another
collection version, never vectors of two kinds in one index.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.config.models import OnnxEmbedderOptions
from knowhub.errors import ConfigError
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.local.engine import EngineSpec, OnnxEngine, shared
from knowhub.providers.local.folder import ModelFolder, open_folder
from knowhub.providers.local.quantize import SCHEME

__all__ = ["OnnxEmbedder", "create"]

_POOLED = "sentence_embedding"  # sentence-transformers exports with pooling inside
_TOKENS = ("last_hidden_state", "token_embeddings")


class OnnxEmbedder(Embedder):
    """A bi-encoder in a local ONNX folder; the session is built on first use (at once
    when the folder's configuration does not say the vectors' width)."""

    parallel = False
    background = True  # ORT's run releases the GIL
    derives_relevance = True  # no range was measured for it (knowhub.query.calibration)

    def __init__(self, options: OnnxEmbedderOptions, cache: Path | None = None) -> None:
        if options.path is None:
            raise ConfigError(
                "embedder 'onnx' needs embedder.onnx.path, the folder of an ONNX export "
                "(see docs/embedders.md); check it with `knowhub models check PATH`"
            )
        self.folder = open_folder(options.path, options.file)
        self.options = options
        prompts = self.folder.prompts()
        query = prompts.get("query", "")
        passage = prompts.get("passage", prompts.get("document", ""))
        self.prefixes = {
            True: query if options.query_prefix is None else options.query_prefix,
            False: passage if options.passage_prefix is None else options.passage_prefix,
        }
        self.max_length = self.folder.length(options.max_length)
        self.languages = frozenset(options.languages) if options.languages else None
        self.batch_size = options.batch_size
        self.spec = EngineSpec(
            self.folder, self.max_length, options.threads, options.quantize, cache
        )
        self._engine: OnnxEngine | None = None
        self.output = ""
        declared = self.folder.dim()
        self.dim = options.dim or declared or self._probe()
        settings: dict[str, Any] = {
            "pooling": options.pooling,
            "prefixes": [self.prefixes[True], self.prefixes[False]],
            "max_length": self.max_length,
            "dim": self.dim,
        }
        if options.quantize != "none":  # absent otherwise: float models keep their ids
            settings["quantize"] = f"{options.quantize}/{SCHEME}"
        digest = hashlib.sha256(
            (self.folder.digest + json.dumps(settings, sort_keys=True)).encode()
        ).hexdigest()
        # The model's kind and its content, not the folder's name: a folder moved or
        # renamed keeps its collections (versions take its new path from knowhub.yaml).
        kind = str(self.folder.config("config.json").get("model_type") or "model")
        self.model_id = f"onnx:{kind}:{digest[:12]}"

    def _probe(self) -> int:
        """The width of a vector, where the folder's configuration does not say."""
        return int(self.pooled(["dimension"], is_query=False).shape[1])

    def load(self) -> OnnxEngine:
        if self._engine is None:
            found = shared(self.spec)
            self.output = _output(found, self.options.pooling, self.folder)
            self._engine = found
        return self._engine

    def pooled(self, texts: list[str], is_query: bool) -> Vectors:
        """Pooled vectors of ``texts``, all their dimensions, not normalised."""
        found = self.load()
        prefix = self.prefixes[is_query]
        outputs = found.run(found.encode([prefix + text for text in texts]), self.output)
        pooling: str = self.options.pooling
        if pooling == "auto":
            pooling = self.folder.pooling() or "mean"
        return np.vstack([_pool(out, pooling) for out in outputs]).astype(np.float32)

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        vectors = self.pooled(texts, is_query)
        width = vectors.shape[1]
        if width < self.dim or (not self.options.dim and width != self.dim):
            said = "embedder.onnx.dim" if self.options.dim else "its configuration"
            raise ConfigError(
                f"{self.folder.graph} gives vectors of {width} dimensions, {said} says "
                f"{self.dim}: fix config.json / 1_Pooling/config.json, or set "
                "embedder.onnx.dim (at most the model's width)"
            )
        truncated: Vectors = vectors[:, : self.dim]  # Matryoshka: the first dims carry most
        return truncated


def _output(found: OnnxEngine, pooling: str, folder: ModelFolder) -> str:
    """The graph output to read: its own pooled vector where pooling is left to it, else
    the tokens' hidden states."""
    if pooling == "auto" and _POOLED in found.outputs:
        return _POOLED
    if "Dense" in folder.modules():  # pooled here, the Dense layer would be left out
        raise ConfigError(
            f"{folder.root} has a Dense layer after pooling (modules.json): set "
            "embedder.onnx.pooling: auto and export the whole model into the graph "
            "(optimum-cli export onnx --library sentence_transformers: output "
            "sentence_embedding)"
        )
    names: list[str] = [*_TOKENS, *found.outputs]
    for name in names:
        if name in found.outputs and len(found.outputs[name]) == 3:
            return name
    raise ConfigError(
        f"{folder.graph} has no per-token output (outputs: {', '.join(found.outputs)}) to "
        f"pool {pooling!r}: set embedder.onnx.pooling: auto, or export for feature-extraction"
    )


def _pool(out: np.ndarray[Any, Any], pooling: str) -> np.ndarray[Any, Any]:
    """One text's vector from its output: already pooled, or its tokens' states
    (unpadded, so every row is a token: mean over all, the first, or the last)."""
    if out.ndim == 1:
        return out
    row = {"cls": 0, "last": -1}.get(pooling)
    pooled: np.ndarray[Any, Any] = out.mean(axis=0) if row is None else out[row]
    return pooled


def create(settings: Settings) -> OnnxEmbedder:
    return OnnxEmbedder(settings.embedder.onnx, Path(settings.data_dir) / "models")
