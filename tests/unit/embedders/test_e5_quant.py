"""The int8 products of the E5 graph (``e5.quant``) on ONNX Runtime, on synthetic data.

Per window: the product must stay close to the float one, and smoothing (with a few input
channels 30x the others' size, as a LayerNorm's outliers run) must bring it closer. Per
token (GELU's output, never below -0.17): a row's result must not depend on the other
rows, and with some tokens 100x the others' size (as there), each row must keep the
precision one scale for the window would take from the small ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime

from knowhub.providers.embedders.e5.graph import Builder
from knowhub.providers.embedders.e5.quant import (
    GELU_FLOOR,
    smoothing,
    token_linear,
    window_linear,
)

WIDTH, OUT = 64, 48
Array = np.ndarray[Any, Any]


def run(product: Callable[[Builder], str], x: Array) -> Any:
    g = Builder()
    y = product(g)
    g.nodes.append(g.helper.make_node("Identity", [y], ["y"]))
    tensor = g.helper.make_tensor_value_info
    model = g.model([tensor("x", 1, [1, "l", WIDTH])], tensor("y", 1, [1, "l", OUT]), 23)
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x[None].astype(np.float32)})[0][0]


def per_window(dense: Array, factors: Any, x: Array) -> Any:
    return run(lambda g: window_linear(g, "x", [dense], [None], factors)[0], x)


def per_token(dense: Array, x: Array) -> Any:
    return run(lambda g: token_linear(g, "x", dense, np.zeros(OUT), GELU_FLOOR), x)


def outlier_data(seed: int) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(20, WIDTH))
    x[:, :3] *= 30  # three outlier channels
    dense = rng.normal(size=(OUT, WIDTH)) / 8
    return x, dense


def gelu_like(seed: int) -> tuple[Array, Array]:
    rng = np.random.default_rng(seed)
    x = np.maximum(rng.normal(size=(20, WIDTH)), GELU_FLOOR)
    x[:2] *= 100  # two tokens far larger than the rest
    dense = rng.normal(size=(OUT, WIDTH)) / 8
    return x, dense


def test_the_window_product_is_close_to_the_float_one() -> None:
    x, dense = outlier_data(2)
    exact = x @ dense.T
    error = np.abs(per_window(dense, None, x) - exact).max() / np.abs(exact).max()
    assert error < 0.05, error


def test_smoothing_outlier_channels_reduces_the_error() -> None:
    x, dense = outlier_data(3)
    exact = x @ dense.T
    factors = smoothing(np.abs(x).max(axis=0), [dense])
    plain = np.abs(per_window(dense, None, x) - exact).mean()
    smoothed = np.abs(per_window(dense, factors, x) - exact).mean()
    assert smoothed < 0.7 * plain, (smoothed, plain)
    # The divisors keep the activations' overall size (geometric mean 1).
    assert abs(float(np.exp(np.mean(np.log(factors)))) - 1) < 1e-4


def test_a_token_row_does_not_depend_on_the_others() -> None:
    x, dense = gelu_like(1)
    together = per_token(dense, x)
    alone = np.vstack([per_token(dense, x[i : i + 1]) for i in range(3)])
    np.testing.assert_array_equal(together[:3], alone)


def test_a_scale_per_token_keeps_the_small_tokens_precise() -> None:
    x, dense = gelu_like(4)
    exact = x @ dense.T
    small = slice(2, None)  # the rows a window's one scale would crush

    def error(result: Array) -> float:
        return float(np.abs(result[small] - exact[small]).max() / np.abs(exact[small]).max())

    assert error(per_token(dense, x)) < 0.02
    assert error(per_token(dense, x)) < 0.2 * error(per_window(dense, None, x))


def test_values_at_the_floor_are_kept() -> None:
    x = np.full((4, WIDTH), GELU_FLOOR)
    x[0, :8] = 3.0  # a row with a peak: its step is set by the peak
    dense = np.random.default_rng(5).normal(size=(OUT, WIDTH)) / 8
    exact = x @ dense.T
    np.testing.assert_allclose(per_token(dense, x), exact, atol=0.02 * np.abs(exact).max())
