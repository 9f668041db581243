"""Typed metadata filters from API clients."""

from __future__ import annotations

import pytest

from knowhub import QueryError
from knowhub.validate import check_filters


def test_scalars_and_in_lists_become_text_values() -> None:
    assert check_filters(None) == {}
    assert check_filters({"team": "ops", "year": 2024, "ok": True, "n": 1.5}) == {
        "team": "ops", "year": "2024", "ok": "1", "n": "1.5",
    }  # fmt: skip
    assert check_filters({"lang": {"in": ["en", "ru", 3]}}) == {"lang": ("en", "ru", "3")}


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (["team", "ops"], "filters must be an object"),
        ({"": "ops"}, "non-empty metadata name"),
        ({"team": {"gt": 1}}, 'filters.team: an object must be {"in"'),
        ({"team": {"in": []}}, "at least one value"),
        ({"team": {"in": "ops"}}, "at least one value"),
        ({"team": None}, "filters.team: None is not a value"),
        ({"team": "  "}, "filters.team"),
        ({"team": {"in": [["nested"]]}}, "filters.team"),
    ],
)
def test_bad_filters_name_the_key_and_the_fix(filters: object, message: str) -> None:
    with pytest.raises(QueryError, match=message.replace("{", r"\{").replace("(", r"\(")):
        check_filters(filters)
