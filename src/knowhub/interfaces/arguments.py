"""What clients send, checked alike by the CLI, HTTP and MCP: typed filters and KEY=VALUE
pairs (tags, filters). The checks the app and the pipelines share are :mod:`knowhub.checks`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from knowhub.checks import check_text
from knowhub.errors import QueryError
from knowhub.models import FilterValue

__all__ = ["check_filters", "parse_key_values"]


def parse_key_values(items: Iterable[str], option: str, empty: bool = False) -> dict[str, str]:
    """``["team=ops", "lang=en"]`` → ``{"team": "ops", "lang": "en"}``; with ``empty``,
    ``team=`` is kept as ``{"team": ""}`` (a tag to remove)."""
    out: dict[str, str] = {}
    for item in items:
        check_text(item, option)
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not (value.strip() or empty):
            raise QueryError(f"{option} {item!r} is not key=value: write e.g. {option} team=ops")
        out[key.strip()] = value.strip()
    return out


def check_filters(filters: Any) -> dict[str, FilterValue]:
    """Typed filters from a client: ``{"team": "ops", "language": {"in": ["en", "ru"]}}``.

    Scalars (strings, numbers, booleans) compare as text; ``{"in": [...]}`` matches any.
    """
    if filters is None:
        return {}
    check_text(filters, "filters")
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
