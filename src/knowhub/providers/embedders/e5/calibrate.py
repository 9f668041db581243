"""Per-channel input peaks of every weight matrix, measured on the bundled texts.

The int8 graph smooths its activations' outlier channels into the weights
(:mod:`.quant`); how large each channel runs is measured once, when the graph is built,
by running the encoder in float on ``calibration.txt``: 29 windows of the fictional
Northwind Robotics documents (examples/, en/ru/zh; Markdown, HTML and plain text), none
of a shared data set. A channel's peak is its largest magnitude over every token seen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.providers.embedders.e5.graph import build
from knowhub.providers.embedders.e5.quant import Calibration
from knowhub.providers.embedders.e5.tokenizer import E5Tokenizer
from knowhub.providers.embedders.e5.weights import E5Weights, Lookup

__all__ = ["TEXTS", "calibrate"]

TEXTS = Path(__file__).with_name("calibration.txt")
Runner = Callable[[bytes], Callable[[np.ndarray[Any, Any]], dict[str, np.ndarray[Any, Any]]]]


def calibrate(weights: E5Weights, tokenizer: E5Tokenizer, runner: Runner) -> Calibration:
    """Peaks of each matrix's input over the calibration texts; ``runner`` turns a model
    into a function from one window's embeddings to the graph's outputs by name."""
    run = runner(build(weights, "float"))
    lookup = Lookup(weights)
    texts = TEXTS.read_text(encoding="utf-8").split("\f\n")
    peaks: dict[str, np.ndarray[Any, Any]] = {}
    for ids in tokenizer.encode(["passage: " + text for text in texts]):
        outputs = run(lookup.window(ids[: weights.positions - 2]))
        for name, value in outputs.items():
            if name.startswith("peak:"):
                key = name.removeprefix("peak:")
                peaks[key] = np.maximum(peaks.get(key, value), value)
    return peaks
