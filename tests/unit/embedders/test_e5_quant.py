"""The int8 product of the E5 graph (``e5.quant``) on ONNX Runtime, on synthetic data.

Per-token scales: a row's result must not depend on the other rows. Smoothing: with a few
input channels 30x the others' size (as a LayerNorm's outliers run), dividing them out
before quantising must bring the product closer to the float one. A floor (GELU's output
never goes below -0.17): shifting the input to start at 0 uses all 256 codes, halving the
error, and the product stays that of the unshifted input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime

from knowhub.providers.embedders.e5.graph import Builder
from knowhub.providers.embedders.e5.quant import int8_linear, smoothing

WIDTH, OUT = 64, 48


def run_product(
    dense: np.ndarray[Any, Any], factors: Any, x: np.ndarray[Any, Any], floor: float | None = None
) -> Any:
    g = Builder()
    (y,) = int8_linear(g, "x", [dense], [None], factors, floor)
    g.nodes.append(g.helper.make_node("Identity", [y], ["y"]))
    tensor = g.helper.make_tensor_value_info
    model = g.model([tensor("x", 1, [1, "l", WIDTH])], tensor("y", 1, [1, "l", OUT]), 23)
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x[None].astype(np.float32)})[0][0]


def outlier_data(seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(20, WIDTH))
    x[:, :3] *= 30  # three outlier channels
    dense = rng.normal(size=(OUT, WIDTH)) / 8
    return x, dense


def test_a_row_does_not_depend_on_the_others() -> None:
    x, dense = outlier_data(1)
    together = run_product(dense, None, x)
    alone = np.vstack([run_product(dense, None, x[i : i + 1]) for i in range(3)])
    np.testing.assert_array_equal(together[:3], alone)


def test_the_int8_product_is_close_to_the_float_one() -> None:
    x, dense = outlier_data(2)
    exact = x @ dense.T
    error = np.abs(run_product(dense, None, x) - exact).max() / np.abs(exact).max()
    assert error < 0.05, error


def test_smoothing_outlier_channels_reduces_the_error() -> None:
    x, dense = outlier_data(3)
    exact = x @ dense.T
    factors = smoothing(np.abs(x).max(axis=0), [dense])
    plain = np.abs(run_product(dense, None, x) - exact).mean()
    smoothed = np.abs(run_product(dense, factors, x) - exact).mean()
    assert smoothed < 0.7 * plain, (smoothed, plain)
    # The divisors keep the activations' overall size (geometric mean 1).
    assert abs(float(np.exp(np.mean(np.log(factors)))) - 1) < 1e-4


def test_an_input_above_a_floor_is_quantised_over_all_codes() -> None:
    rng = np.random.default_rng(4)
    x = np.maximum(rng.normal(size=(20, WIDTH)), -0.17)  # like GELU's output
    dense = rng.normal(size=(OUT, WIDTH)) / 8
    exact = x @ dense.T
    symmetric = np.abs(run_product(dense, None, x) - exact).mean()
    shifted = np.abs(run_product(dense, None, x, floor=-0.17) - exact).mean()
    assert shifted < 0.7 * symmetric, (shifted, symmetric)
