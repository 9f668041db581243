"""int8 products for the E5 graph: activations per token, weights per output channel.

A scale per token (not one per tensor) keeps a text's vector independent of anything run
beside it and holds the vectors close to exact mode's. In ONNX Runtime's fewest ops:
the row's peak (``ReduceMax``/``ReduceMin``, no ``Abs`` copy of the tensor), one blocked
``QuantizeLinear`` (a block is the whole row), and ``MatMulIntegerToFloat``, which applies
the weights' scales as it writes floats; the token's scale is one ``Mul`` after. Matrices
that read the same input (the attention's q, k, v) share its quantisation.

Smoothing (SmoothQuant, Xiao et al. 2023): a few channels of a LayerNorm's output run 10x
the others' size and would spend a token's int8 range alone. Dividing input channel j by
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

__all__ = ["ALPHA", "GELU_FLOOR", "Calibration", "int8_linear", "smoothing"]

ALPHA = 0.7
GELU_FLOOR = -0.17  # GELU's least value: -0.16997, at x = -0.75
Calibration = Mapping[str, np.ndarray[Any, Any]]  # matrix name -> its input's channel peaks
_MS = "com.microsoft"


def smoothing(peaks: np.ndarray[Any, Any], dense: list[np.ndarray[Any, Any]]) -> Any:
    """Per input channel divisors of one input shared by ``dense`` (each ``(out, in)``),
    normalised to a geometric mean of 1 so the activations keep their overall size."""
    wpeak = np.max([np.abs(matrix).max(axis=0) for matrix in dense], axis=0)
    factors = np.maximum(peaks, 1e-6) ** ALPHA / np.maximum(wpeak, 1e-6) ** (1 - ALPHA)
    return (factors / np.exp(np.mean(np.log(factors)))).astype(np.float32)


def int8_linear(
    g: Builder,
    x: str,
    dense: list[np.ndarray[Any, Any]],
    biases: list[np.ndarray[Any, Any] | None],
    factors: Any | None,
    floor: float | None = None,
) -> list[str]:
    """``x @ W.T (+ b)`` for each ``W`` of ``dense`` (and its ``b`` of ``biases``) on one
    quantisation of ``x``: divided by ``factors`` first (each ``W``'s columns multiplied by
    them), or, where ``x`` never goes below ``floor``, shifted to start at 0."""
    # Divided by factors, x would no longer be bounded by the floor (codes clipped at 0).
    assert factors is None or floor is None, "smoothing and a floor do not combine"
    if factors is not None:
        x = g.op("Mul", [x, g.const((1.0 / factors).astype(np.float32))])
        dense = [matrix * factors[None, :] for matrix in dense]
    codes, step, zero = _quantise(g, x, dense[0].shape[1], floor)
    one = g.const(np.array(1.0, np.float32))
    outs = []
    for matrix, bias in zip(dense, biases, strict=True):
        scale = (np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127.0).astype(np.float32)
        weights = np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8)
        product = g.op(
            "MatMulIntegerToFloat",
            [codes, g.const(weights.T), one, g.const(scale), zero],
            domain=_MS,
        )
        out = g.op("Mul", [product, step])
        if floor is not None:  # x @ W.T = (x - floor) @ W.T + floor * (row sums of W)
            shift = floor * (weights * scale[:, None]).sum(axis=1)
            bias = shift if bias is None else bias + shift
        outs.append(out if bias is None else g.op("Add", [out, g.const(bias.astype(np.float32))]))
    return outs


def _centres(g: Builder, step: str) -> str:
    """The zero points of a blocked QuantizeLinear: 128 in the shape of its scale,
    ``(1, length, 1)`` everywhere in a run, so made once per graph."""
    if g.centres is None:
        centre = g.helper.make_tensor("centre", 2, [1], [128])  # uint8
        g.centres = g.op("ConstantOfShape", [g.op("Shape", [step])], value=centre)
    return g.centres


def _quantise(g: Builder, x: str, width: int, floor: float | None) -> tuple[str, str, str]:
    """uint8 codes of ``x``, each row's step and the zero point's constant: symmetric
    around 128, or, above a ``floor``, ``x - floor`` over all 256 codes from 0 (twice the
    resolution for GELU's output, which never goes below -0.17)."""
    axis = g.const(np.array([-1], np.int64))
    eps = g.const(np.array(1e-12, np.float32))
    if floor is not None:
        x = g.op("Sub", [x, g.const(np.array(floor, np.float32))])
        peak = g.op("Max", [g.op("ReduceMax", [x, axis], keepdims=1), eps])
        step = g.op("Mul", [peak, g.const(np.array(1.0 / 255.0, np.float32))])
        codes = g.op("QuantizeLinear", [x, step], axis=-1, block_size=width)  # uint8 from 0
        return codes, step, g.const(np.array(0, np.uint8))
    high = g.op("ReduceMax", [x, axis], keepdims=1)
    low = g.op("ReduceMin", [x, axis], keepdims=1)
    peak = g.op("Max", [high, g.op("Neg", [low]), eps])
    step = g.op("Mul", [peak, g.const(np.array(1.0 / 127.0, np.float32))])
    codes = g.op("QuantizeLinear", [x, step, _centres(g, step)], axis=-1, block_size=width)
    return codes, step, g.const(np.array(128, np.uint8))
