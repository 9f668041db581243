"""Argument checks every layer shares: one wording for one mistake.

Text that UTF-8 cannot encode, collection and version names, doc-hash prefixes, a query's
size, top_k, min_score and filter keys. The app, the query pipeline, ingest's bundles and
versions check with these as the interfaces do, so they live below all of them (above only
``knowhub.models`` and ``knowhub.errors``). What only clients send (typed filters, KEY=VALUE
pairs) is :mod:`knowhub.interfaces.arguments`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from knowhub.errors import QueryError
from knowhub.models import Filters, FilterValue

__all__ = [
    "FILTER_ALIASES",
    "FILTER_COLUMNS",
    "MAX_QUERY_BYTES",
    "MIN_HASH_PREFIX",
    "VERSION_SEPARATOR",
    "check_collection_name",
    "check_doc_hash_prefix",
    "check_filter_keys",
    "check_filters",
    "check_min_score",
    "check_query",
    "check_store_name",
    "check_text",
    "check_top_k",
    "logical_name",
    "unpaired_surrogate",
]

COLLECTION_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
# Version n >= 2 of collection C is the store collection "C@vN": '@' is outside the names
# users may give, so the two can never clash.
VERSION_SEPARATOR = "@v"
_STORE_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}(@v[1-9][0-9]*)?")
MAX_QUERY_BYTES = 4096
# Eight, not four: many words are hex ("face", "added", "decade"), so a shorter minimum lets
# a word typed by mistake pass for a hash; and a 4-digit prefix of one document also starts
# another in 14% of 10,000-document collections, an 8-digit one in 1 of 430,000.
MIN_HASH_PREFIX = 8
# Filter keys every chunk has (columns); any other key is one of its documents' metadata.
FILTER_COLUMNS = ("language", "source", "format")
# What people (and models copying older docs) write for a column: taken as the column unless
# the collection's metadata has a key of that very name, which then wins.
FILTER_ALIASES = {"lang": "language"}
_LISTED_KEYS = 30  # metadata keys an unknown-key error names before "and N more"
_HEX_RE = re.compile(r"[0-9a-f]+")
T = TypeVar("T")


def unpaired_surrogate(value: Any, field: str) -> str | None:
    """What is wrong with ``value`` (a string, or dicts and lists of them, keys included)
    when it holds a lone UTF-16 surrogate, or None.

    JSON's ``"\\ud800"`` and undecodable bytes in a command line (Python's surrogateescape)
    both arrive as one: such a string cannot be encoded, so SQLite, the tokenizers and the
    JSON reply would all fail on it later, far from the field that carried it.
    """
    if isinstance(value, str):
        at = _surrogate_at(value)
        if at is None:
            return None
        return (
            f"{field}: contains an unpaired surrogate (U+{ord(value[at]):04X}) at position {at}; "
            "send valid UTF-8 text"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and (problem := unpaired_surrogate(key, f"{field} key")):
                return problem
            if problem := unpaired_surrogate(item, f"{field}.{key}"):
                return problem
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if problem := unpaired_surrogate(item, f"{field}[{i}]"):
                return problem
    return None


def _surrogate_at(text: str) -> int | None:
    try:
        text.encode("utf-8")  # C speed; surrogates are the one thing UTF-8 cannot encode
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_text(value: T, field: str) -> T:
    """``value`` unchanged, or a QueryError naming ``field`` if it holds a lone surrogate."""
    problem = unpaired_surrogate(value, field)
    if problem is not None:
        raise QueryError(problem)
    return value


def check_doc_hash_prefix(text: str, field: str = "doc hash") -> str:
    """A doc-hash prefix as users type it: hex digits only, at least :data:`MIN_HASH_PREFIX`
    of them; returned in lower case (hashes are stored so).

    Stores compare it as plain text, yet it is checked here so that no character a pattern
    language gives a meaning (``_ % * [ \\``) ever reaches one.
    """
    key = text.strip().lower()
    if not _HEX_RE.fullmatch(key):
        raise QueryError(
            f"{field} {text!r} is not a doc-hash prefix: use hex digits only (0-9, a-f), at "
            f"least {MIN_HASH_PREFIX} of them, as `knowhub docs` lists them"
        )
    if len(key) < MIN_HASH_PREFIX:
        raise QueryError(
            f"{field} {text!r} is too short: give at least {MIN_HASH_PREFIX} hex digits of "
            "the doc hash, as `knowhub docs` lists them"
        )
    return key


def check_collection_name(name: str) -> str:
    check_text(name, "collection")
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


def check_query(query: str, field: str = "query") -> str:
    text = check_text(query, field).strip()
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
    if not math.isfinite(min_score) or not 0 <= min_score <= 1:
        raise QueryError(
            f"min_score must be a number >= 0 and <= 1 (a hit's relevance), got {min_score}"
        )
    return min_score


def check_filter_keys(
    filters: Filters, metadata_keys: Callable[[], Collection[str]], collection: str
) -> dict[str, FilterValue]:
    """``filters`` with every key resolved to one the collection knows: a column
    (:data:`FILTER_COLUMNS`), a metadata key of its documents, or an alias of a column
    (:data:`FILTER_ALIASES`). A key that is none of these matches nothing, so it is a
    QueryError listing the known keys, never a silent empty result.

    ``metadata_keys`` is called only when some key is not a column (the common filters on
    language, source or format need no look-up).
    """
    if all(key in FILTER_COLUMNS for key in filters):
        return dict(filters)
    known = metadata_keys()
    out: dict[str, FilterValue] = {}
    given: dict[str, str] = {}  # resolved key → the key as the caller wrote it
    for key, value in filters.items():
        name = key if key in FILTER_COLUMNS or key in known else FILTER_ALIASES.get(key)
        if name is None:
            raise QueryError(_unknown_key(key, known, collection))
        if name in given:
            first, second = sorted((given[name], key))
            raise QueryError(
                f"filters: {first!r} and {second!r} both filter on {name!r}: give only one"
            )
        out[name], given[name] = value, key
    return out


def _unknown_key(key: str, known: Collection[str], collection: str) -> str:
    names = sorted(known)
    listed = ", ".join(names[:_LISTED_KEYS]) or "none"
    more = f" and {len(names) - _LISTED_KEYS} more" if len(names) > _LISTED_KEYS else ""
    aliases = ", ".join(f"{a} for {c}" for a, c in FILTER_ALIASES.items())
    return (
        f"filters: unknown key {key!r} in collection {collection!r}, so it would match "
        f"nothing: use a column ({', '.join(FILTER_COLUMNS)}; also {aliases}) or a metadata "
        f"key its documents have ({listed}{more})"
    )


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
