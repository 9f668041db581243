"""int8 products for the E5 graph: weights per output channel, activations per window or
per token.

Most inputs (the attention's, its output projection's, the FFN's first matrix's) are
quantised once per window: ONNX Runtime's ``DynamicQuantizeLinear`` (one scale and zero
point for the run) feeds ``MatMulIntegerToFloat``, which applies both scales and adds the
bias as it writes floats, so nothing follows the product. The engine runs one window per
run, so a text's vector still depends on nothing run beside it. Matrices that read the
same input (the attention's q, k, v) share its quantisation.

GELU's output (the FFN's second matrix's input) keeps a scale per token: some tokens'
activations there run 100x others', and one scale for the window took the mean cosine
with exact mode from 0.99968 to 0.99784. It never goes below its floor (-0.17), so its
codes start at a fixed zero point ``_ZERO`` (a constant, as ``MatMulIntegerToFloat``
needs): the token's step is the larger of ``peak / (255 - _ZERO)`` and ``-floor /
_ZERO``, nine tenths of the codes cover the positive range, and no pass shifts the input.

Smoothing (SmoothQuant, Xiao et al. 2023): a few channels of a LayerNorm's output run 10x
the others' size and would spend the int8 range alone. Dividing input channel j by
``s_j`` and multiplying the weights' column j by it leaves the product unchanged and evens
the channels out; ``s_j = peak_j ** a / wpeak_j ** (1 - a)`` from the channel's peak on the
calibration texts (:mod:`.calibrate`). a = 0.7 took the mean cosine with exact mode from
0.99928 to 0.99964 (0.3: 0.99949, 0.5: 0.99960, 0.8: 0.99948).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from knowhub.providers.embedders.e5.graph import Builder

__all__ = [
    "ALPHA",
    "GELU_FLOOR",
    "Calibration",
    "divisors",
    "smoothing",
    "token_linear",
    "window_linear",
]

ALPHA = 0.7
GELU_FLOOR = -0.17  # GELU's least value: -0.16997, at x = -0.75
Calibration = Mapping[str, np.ndarray[Any, Any]]  # matrix name -> its input's channel peaks
_MS = "com.microsoft"
# Codes of GELU's output start here: 24 kept the cosine with exact mode at 0.99968 (12:
# 0.99964, 40: 0.99968) — enough room for the floor, most codes left for the peak.
_ZERO = 24
_Array = np.ndarray[Any, Any]


def smoothing(peaks: _Array, dense: list[_Array]) -> Any:
    """Per input channel divisors of one input shared by ``dense`` (each ``(out, in)``),
    normalised to a geometric mean of 1 so the activations keep their overall size."""
    return divisors(peaks, np.max([np.abs(matrix).max(axis=0) for matrix in dense], axis=0))


def divisors(peaks: _Array, wpeak: _Array) -> Any:
    """:func:`smoothing`'s divisors from the input channels' ``peaks`` and the largest
    weight each channel meets (``wpeak``) in the matrices reading it."""
    factors = np.maximum(peaks, 1e-6) ** ALPHA / np.maximum(wpeak, 1e-6) ** (1 - ALPHA)
    return (factors / np.exp(np.mean(np.log(factors)))).astype(np.float32)


def window_linear(
    g: Builder, x: str, dense: list[_Array], biases: list[_Array | None], factors: Any | None
) -> list[str]:
    """``x @ W.T (+ b)`` for each ``W`` of ``dense`` (and its ``b`` of ``biases``) on one
    quantisation of the whole of ``x``, divided by ``factors`` first (each ``W``'s
    columns multiplied by them)."""
    if factors is not None:
        x = g.op("Mul", [x, g.const((1.0 / factors).astype(np.float32))])
        dense = [matrix * factors[None, :] for matrix in dense]
    stem = g.name("dql")
    codes, step, zero = f"{stem}_codes", f"{stem}_step", f"{stem}_zero"
    g.nodes.append(g.helper.make_node("DynamicQuantizeLinear", [x], [codes, step, zero]))
    outs = []
    for matrix, bias in zip(dense, biases, strict=True):
        weights, scale = _int8(matrix)
        full = np.zeros(matrix.shape[0], np.float32) if bias is None else bias
        inputs = [codes, g.const(weights.T), step, g.const(scale), zero, "", g.const(full)]
        outs.append(g.op("MatMulIntegerToFloat", inputs, domain=_MS))
    return outs


def token_linear(g: Builder, x: str, matrix: _Array, bias: _Array, floor: float) -> str:
    """``x @ W.T + b`` with a scale per token of ``x``, which never goes below ``floor``."""
    axis = g.const(np.array([-1], np.int64))
    peak = g.op("ReduceMax", [x, axis], keepdims=1)
    least = g.const(np.array(-floor / _ZERO, np.float32))
    step = g.op(
        "Max", [g.op("Mul", [peak, g.const(np.array(1 / (255 - _ZERO), np.float32))]), least]
    )
    codes = g.op("QuantizeLinear", [x, step, _zeros(g, step)], axis=-1, block_size=matrix.shape[1])
    weights, scale = _int8(matrix)
    zero = g.const(np.array(_ZERO, np.uint8))
    one = g.const(np.array(1.0, np.float32))
    product = g.op(
        "MatMulIntegerToFloat", [codes, g.const(weights.T), one, g.const(scale), zero], domain=_MS
    )
    return g.op("Add", [g.op("Mul", [product, step]), g.const(bias.astype(np.float32))])


def _int8(matrix: _Array) -> tuple[_Array, _Array]:
    """``matrix`` as int8 with a scale per row (output channel), symmetric."""
    scale = (np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127.0).astype(np.float32)
    return np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8), scale


def _zeros(g: Builder, step: str) -> str:
    """The zero points of a blocked QuantizeLinear: ``_ZERO`` in the shape of its scale,
    ``(1, length, 1)`` everywhere in a run, so made once per graph."""
    if g.zeros is None:
        value = g.helper.make_tensor("zero", 2, [1], [_ZERO])  # uint8
        g.zeros = g.op("ConstantOfShape", [g.op("Shape", [step])], value=value)
    return g.zeros
