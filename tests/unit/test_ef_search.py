"""The HNSW walk's efSearch grows with the collection, so recall does not fall with size."""

from __future__ import annotations

from knowhub.providers.stores.derived.live import EF_SCALE_ROWS, IndexOptions, ef_search


def test_ef_search_is_the_setting_up_to_the_scale_and_grows_in_proportion_above() -> None:
    options = IndexOptions(ann_ef_search=256)
    assert ef_search(options, 50_000) == ef_search(options, EF_SCALE_ROWS) == 256
    assert ef_search(options, 2 * EF_SCALE_ROWS) == 512
    assert ef_search(options, 1_000_000) == 1600
    assert ef_search(IndexOptions(ann_ef_search=64), 1_000_000) == 400
