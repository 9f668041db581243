"""A local folder's ONNX graph and tokenizer on ONNX Runtime: token ids in, outputs out.

Each text (or pair) runs alone, unpadded, on a one-thread session, up to ``threads`` at
once (:mod:`knowhub.providers.onnxrun`): no padding means no position a mask must hide,
so a text's result never depends on what ran beside it, and last-token pooling needs no
knowledge of the side a model pads on.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from knowhub.errors import ConfigError
from knowhub.providers.local.folder import ModelFolder
from knowhub.providers.onnxrun import Runs, one_thread_options

__all__ = ["INPUTS", "Encoded", "OnnxEngine", "shared"]

# The inputs a Hugging Face export takes, all filled here; any other is refused.
INPUTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids")
Encoded = tuple[list[int], list[int]]  # token ids, token type ids


class OnnxEngine:
    """The session and tokenizer of one model folder, for texts of at most ``max_length``
    tokens (longer ones are cut, as sentence-transformers cuts them)."""

    def __init__(self, folder: ModelFolder, max_length: int, threads: int) -> None:
        import onnxruntime as ort
        import tokenizers

        self.folder = folder
        try:
            self.tokenizer = tokenizers.Tokenizer.from_file(str(folder.tokenizer))
        except Exception as exc:  # the Rust side raises plain Exceptions
            raise ConfigError(
                f"{folder.tokenizer} is not a tokenizers file ({exc}): save the model's "
                "tokenizer with AutoTokenizer.save_pretrained(folder)"
            ) from exc
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)  # longest_first, as HF truncates
        try:
            self.session: Any = ort.InferenceSession(
                str(folder.graph), one_thread_options(ort), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ORT raises its own exception types for a bad model
            raise ConfigError(
                f"ONNX Runtime cannot load {folder.graph}: {exc} — re-export it "
                "(optimum-cli export onnx) or check it with `knowhub models check`"
            ) from exc
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = {o.name: o.shape for o in self.session.get_outputs()}
        unknown = [name for name in self.inputs if name not in INPUTS]
        if "input_ids" not in self.inputs or unknown:
            raise ConfigError(
                f"{folder.graph} takes inputs {', '.join(self.inputs)}; knowhub fills "
                f"{', '.join(INPUTS)} (input_ids required): export it for feature-extraction "
                "or text-classification with optimum-cli"
            )
        self._runs = Runs(threads)

    def encode(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[Encoded]:
        """Token ids (and type ids) of ``texts``, or of (text, pair) pairs, cut to length."""
        if pairs is None:
            done = self.tokenizer.encode_batch(list(texts))
        else:
            done = self.tokenizer.encode_batch(list(zip(texts, pairs, strict=True)))
        return [(list(e.ids), list(e.type_ids)) for e in done]

    def run(self, encoded: Sequence[Encoded], output: str) -> list[np.ndarray[Any, Any]]:
        """``output`` of each encoded text, run alone (batch dimension dropped)."""

        def one(item: Encoded) -> np.ndarray[Any, Any]:
            ids, types = item
            row = np.array([ids], dtype=np.int64)
            feeds = {"input_ids": row}
            if "attention_mask" in self.inputs:
                feeds["attention_mask"] = np.ones_like(row)
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.array([types], dtype=np.int64)
            if "position_ids" in self.inputs:  # decoder exports; unpadded, so 0..n-1
                feeds["position_ids"] = np.arange(len(ids), dtype=np.int64)[None]
            (result,) = self.session.run([output], feeds)
            value: np.ndarray[Any, Any] = result[0]
            return value

        return self._runs.map(one, list(encoded))


def shared(folder: ModelFolder, max_length: int, threads: int) -> OnnxEngine:
    """One engine per model (its folder's content: graph and tokenizer), length and thread
    count in a process, however many embedders or rerankers ask (each MCP session's App,
    a server's versions)."""
    key = (folder.digest, max_length, threads)
    with _ENGINES_LOCK:  # concurrent first searches must build one session
        if key not in _ENGINES:
            _ENGINES[key] = OnnxEngine(folder, max_length, threads)
        return _ENGINES[key]


_ENGINES: dict[tuple[str, int, int], OnnxEngine] = {}
_ENGINES_LOCK = threading.Lock()
