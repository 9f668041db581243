"""Text every interface takes from users: lone surrogates and doc-hash prefixes."""

from __future__ import annotations

import pytest

from knowhub import QueryError
from knowhub.checks import (
    check_doc_hash_prefix,
    check_filters,
    check_query,
    check_text,
    unpaired_surrogate,
)
from knowhub.interfaces.arguments import parse_key_values

FIX = "; send valid UTF-8 text"


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("\ud800", "query: contains an unpaired surrogate (U+D800) at position 0"),
        ("ab\udfff", "query: contains an unpaired surrogate (U+DFFF) at position 2"),
        ({"team": "o\udc80ps"}, "query.team: contains an unpaired surrogate (U+DC80) at position"),
        ({"te\ud801am": "ops"}, "query key: contains an unpaired surrogate (U+D801) at position 2"),
        ({"lang": {"in": ["en", "\udbff"]}}, "query.lang.in[1]: contains an unpaired surrogate"),
        ([{"content": "\ud800"}], "query[0].content: contains an unpaired surrogate (U+D800)"),
    ],
)
def test_an_unpaired_surrogate_is_named_with_where_it_is(value: object, where: str) -> None:
    problem = unpaired_surrogate(value, "query")
    assert problem is not None and problem.startswith(where) and problem.endswith(FIX)
    with pytest.raises(QueryError, match=r"contains an unpaired surrogate"):
        check_text(value, "query")


def test_valid_text_passes_unchanged() -> None:
    for value in ("plain", "出差住宿 😀 Ünïcode", {"k": ["v", 1, None, True]}, 3, None):
        assert unpaired_surrogate(value, "x") is None
        assert check_text(value, "x") == value


def test_every_shared_check_refuses_a_surrogate_naming_its_field() -> None:
    cases = [
        (lambda: check_query("\ud800"), "query: "),
        (lambda: check_query("\ud800", "question"), "question: "),
        (lambda: check_filters({"team": "\ud800"}), "filters.team: "),
        (lambda: parse_key_values(["team=\udcff"], "--filter"), "--filter: "),
    ]
    for call, field in cases:
        with pytest.raises(QueryError) as refused:
            call()
        assert str(refused.value).startswith(field + "contains an unpaired surrogate")


@pytest.mark.parametrize("text", ["________", "a%%%%%%%", "%", "*", "[0-9a-f]*", "abcdefg1", ""])
def test_a_doc_hash_prefix_must_be_hex(text: str) -> None:
    with pytest.raises(QueryError, match="is not a doc-hash prefix: use hex digits only"):
        check_doc_hash_prefix(text, "key")


def test_a_doc_hash_prefix_needs_eight_digits_and_is_lowered() -> None:
    with pytest.raises(QueryError, match=r"'abcdef1' is too short: give at least 8 hex digits"):
        check_doc_hash_prefix("abcdef1")
    assert check_doc_hash_prefix(" ABCDEF12 ") == "abcdef12"
