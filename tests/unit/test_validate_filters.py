"""Typed metadata filters from API clients."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from knowhub import QueryError
from knowhub.checks import check_filter_keys, check_filters


def test_scalars_and_in_lists_become_text_values() -> None:
    assert check_filters(None) == {}
    assert check_filters({"team": "ops", "year": 2024, "ok": True, "n": 1.5}) == {
        "team": "ops",
        "year": "2024",
        "ok": "1",
        "n": "1.5",
    }
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


def _keys(*names: str) -> Callable[[], frozenset[str]]:
    return lambda: frozenset(names)


def test_lang_is_taken_as_the_language_column() -> None:
    # The README and the MCP schema once showed "lang": an LLM copying it got nothing.
    resolved = check_filter_keys({"lang": ("en", "ru"), "team": "ops"}, _keys("team"), "docs")
    assert resolved == {"language": ("en", "ru"), "team": "ops"}


def test_a_metadata_key_named_like_an_alias_keeps_its_own_meaning() -> None:
    assert check_filter_keys({"lang": "de"}, _keys("lang"), "docs") == {"lang": "de"}


def test_filters_on_columns_only_look_nothing_up() -> None:
    def never() -> frozenset[str]:
        raise AssertionError("metadata keys looked up for column filters")

    filters = {"language": "en", "source": "a.md", "format": "md"}
    assert check_filter_keys(filters, never, "docs") == filters


def test_an_unknown_filter_key_is_an_error_listing_the_known_keys() -> None:
    with pytest.raises(QueryError) as caught:
        check_filter_keys({"teem": "ops"}, _keys("team", "title"), "handbook")
    message = str(caught.value)
    assert "unknown key 'teem' in collection 'handbook'" in message
    assert "language, source, format" in message and "lang for language" in message
    assert "(team, title)" in message


def test_an_alias_and_its_column_together_are_refused() -> None:
    with pytest.raises(QueryError, match="'lang' and 'language' both filter on 'language'"):
        check_filter_keys({"lang": "en", "language": "ru"}, _keys(), "docs")


def test_a_long_list_of_known_keys_is_cut() -> None:
    many = [f"k{i:03d}" for i in range(40)]
    with pytest.raises(QueryError, match=r"k029 and 10 more\)"):
        check_filter_keys({"nope": "x"}, _keys(*many), "docs")
