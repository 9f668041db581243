"""Which dense weight `knowhub calibrate --golden` keeps from the scores it measured."""

from __future__ import annotations

import pytest

from knowhub.query import tuning


@pytest.mark.parametrize(
    ("scores", "configured", "chosen"),
    [
        ({0.3: 0.70, 0.5: 0.72, 0.7: 0.74}, 0.5, 0.7),  # gains 0.02: taken
        ({0.3: 0.70, 0.5: 0.72, 0.7: 0.725}, 0.5, 0.5),  # gains 0.005: noise, kept
        ({0.3: 0.74, 0.5: 0.72, 0.7: 0.74}, 0.5, 0.3),  # equals: the nearer, then the lower
        ({0.4: 0.70, 0.8: 0.72}, 0.5, 0.8),  # configured not tried: the best
        ({0.2: 0.9, 0.4: 0.9, 0.9: 0.9}, 0.5, 0.4),  # all equal: the nearest
    ],
)
def test_choose_takes_a_clear_gain_only(
    scores: dict[float, float], configured: float, chosen: float
) -> None:
    assert tuning.choose(scores, configured) == chosen
