from __future__ import annotations

import pytest

from knowhub.query.fusion import min_max, reciprocal_rank_fusion, weighted_fusion


def test_rrf_matches_hand_worked_example() -> None:
    # a: ranks 1 and 2; b: rank 2 only; c: rank 1 only (k = 60)
    fused = reciprocal_rank_fusion(
        {"lexical": [("a", 9.0), ("b", 5.0)], "dense": [("c", 0.9), ("a", 0.8)]}, k=60
    )
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 61)
    assert [item for item, _ in fused] == ["a", "c", "b"]


def test_rrf_ignores_raw_scores() -> None:
    one = reciprocal_rank_fusion({"x": [("a", 100.0), ("b", 1.0)]})
    two = reciprocal_rank_fusion({"x": [("a", 0.2), ("b", 0.1)]})
    assert one == two


def test_min_max_scales_to_unit_interval() -> None:
    assert min_max([("a", 10.0), ("b", 5.0), ("c", 0.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert min_max([("a", 3.0)]) == {"a": 1.0}
    assert min_max([]) == {}


def test_weighted_fusion_combines_normalised_scores() -> None:
    fused = dict(
        weighted_fusion(
            {"lexical": [("a", 10.0), ("b", 0.0)], "dense": [("b", 0.9), ("c", 0.5)]},
            {"lexical": 0.5, "dense": 0.5},
        )
    )
    assert fused == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.0})


def test_zero_weight_leg_contributes_nothing() -> None:
    fused = weighted_fusion(
        {"lexical": [("a", 2.0), ("b", 1.0)], "dense": [("b", 0.9), ("a", 0.1)]},
        {"lexical": 1.0, "dense": 0.0},
    )
    assert [item for item, _ in fused] == ["a", "b"]


def test_factors_scale_an_items_share_of_one_leg() -> None:
    rankings = {"lexical": [("a", 10.0), ("b", 0.0)], "dense": [("b", 0.9), ("a", 0.5)]}
    damped = {"lexical": {"a": 0.3}}
    fused = dict(weighted_fusion(rankings, {"lexical": 0.5, "dense": 0.5}, damped))
    assert fused == pytest.approx({"a": 0.15, "b": 0.5})
    rrf = dict(reciprocal_rank_fusion(rankings, k=60, factors=damped))
    assert rrf == pytest.approx({"a": 0.3 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61})
