"""What clients send, checked alike by the CLI, HTTP and MCP: KEY=VALUE pairs (tags,
filters). The checks the app, the pipelines and the agent share are :mod:`knowhub.checks`.
"""

from __future__ import annotations

from collections.abc import Iterable

from knowhub.checks import check_text
from knowhub.errors import QueryError

__all__ = ["parse_key_values"]


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
