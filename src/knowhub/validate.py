"""Argument validation shared by every interface (one wording for one mistake)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from knowhub.errors import QueryError
from knowhub.models import FilterValue

__all__ = [
    "MAX_QUERY_BYTES",
    "VERSION_SEPARATOR",
    "check_collection_name",
    "check_filters",
    "check_min_score",
    "check_query",
    "check_store_name",
    "check_top_k",
    "logical_name",
    "parse_duration",
    "parse_key_values",
]

_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)")
_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
COLLECTION_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Version n >= 2 of collection C is the store collection "C@vN": '@' is outside the names
# users may give, so the two can never clash.
VERSION_SEPARATOR = "@v"
_STORE_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}(@v[1-9][0-9]*)?")
MAX_QUERY_BYTES = 4096


def check_collection_name(name: str) -> str:
    if not COLLECTION_RE.fullmatch(name):
        raise QueryError(
            f"invalid collection name {name!r}: use 1-64 characters a-z, 0-9, '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def check_store_name(name: str) -> str:
    """A collection's name, or the store's name of one of its versions (``name@vN``).

    Pipelines take these from the app, which checked the user's name with
    :func:`check_collection_name` and chose the version (``knowhub.versions``).
    """
    if not _STORE_NAME_RE.fullmatch(name):
        check_collection_name(name)  # the user's wording for a bad name
        raise QueryError(f"invalid store collection name {name!r}: expected NAME or NAME@vN")
    return name


def logical_name(store_name: str) -> str:
    """The collection a store collection holds a version of (itself for version 1)."""
    return store_name.split(VERSION_SEPARATOR, 1)[0]


def check_query(query: str) -> str:
    text = query.strip()
    if not text:
        raise QueryError("query is empty: give the words to search for")
    if len(text.encode()) > MAX_QUERY_BYTES:
        size = len(text.encode())
        raise QueryError(
            f"query is {size} bytes, over the {MAX_QUERY_BYTES}-byte limit: shorten it"
        )
    return text


def check_top_k(top_k: int, maximum: int = 100) -> int:
    if not 1 <= top_k <= maximum:
        raise QueryError(f"top_k must be between 1 and {maximum}, got {top_k}")
    return top_k


def check_min_score(min_score: float) -> float:
    if not math.isfinite(min_score) or min_score < 0:
        raise QueryError(f"min_score must be a number >= 0, got {min_score}")
    return min_score


def parse_key_values(items: Iterable[str], option: str) -> dict[str, str]:
    """``["team=ops", "lang=en"]`` → ``{"team": "ops", "lang": "en"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise QueryError(f"{option} {item!r} is not key=value: write e.g. {option} team=ops")
        out[key.strip()] = value.strip()
    return out


def check_filters(filters: Any) -> dict[str, FilterValue]:
    """Typed filters from a client: ``{"team": "ops", "lang": {"in": ["en", "ru"]}}``.

    Scalars (strings, numbers, booleans) compare as text; ``{"in": [...]}`` matches any.
    """
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise QueryError(
            f"filters must be an object of key: value, got {type(filters).__name__}: "
            'write e.g. {"team": "ops"}'
        )
    out: dict[str, FilterValue] = {}
    for key, value in filters.items():
        if not isinstance(key, str) or not key.strip():
            raise QueryError("filters: every key must be a non-empty metadata name")
        if isinstance(value, dict):
            choices = value.get("in")
            if set(value) != {"in"} or not isinstance(choices, list) or not choices:
                raise QueryError(
                    f'filters.{key}: an object must be {{"in": [values...]}} with at least '
                    f"one value, got {value!r}"
                )
            out[key] = tuple(_filter_scalar(key, v) for v in choices)
        else:
            out[key] = _filter_scalar(key, value)
    return out


def _filter_scalar(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"  # how SQLite's JSON stores true/false as text
    if isinstance(value, str | int | float):
        text = str(value).strip()
        if text:
            return text
    raise QueryError(
        f"filters.{key}: {value!r} is not a value to match: use a string, a number, "
        'a boolean or {"in": [...]}'
    )


def parse_duration(text: str, option: str) -> float | None:
    """``"30m"`` → 1800.0 seconds; ``"0"`` → None (never)."""
    match = _DURATION.fullmatch(text.strip().lower())
    if match is None:
        raise QueryError(f"{option} {text!r} is not a duration: write e.g. 90s, 30m or 2h")
    seconds = float(match["n"]) * _SECONDS[match["unit"]]
    return seconds or None
