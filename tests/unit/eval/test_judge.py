"""Ragas's context precision, checked on hand-worked rankings."""

from __future__ import annotations

import pytest

from knowhub.eval.judge import context_precision


@pytest.mark.parametrize(
    ("useful", "expected"),
    [
        ([True, False, False], 1.0),  # precision@1 = 1
        ([False, True], 0.5),  # precision@2 = 1/2
        ([True, False, True], (1 + 2 / 3) / 2),  # mean of precision@1 and precision@3
        ([False, False], 0.0),  # nothing useful
        ([], 0.0),
    ],
)
def test_context_precision_is_the_mean_precision_at_each_useful_rank(
    useful: list[bool], expected: float
) -> None:
    assert context_precision(useful) == pytest.approx(expected)
