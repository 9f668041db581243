"""JSON loader: one ``path: value`` line per scalar, so each line stands on its own.

``{"server": {"port": 80}}`` becomes ``server.port: 80``; list items are ``[i]``.
When the top level is an object, each key holding an object or list gets a
``# key`` heading (after the top-level scalars), giving chunks a section path.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from knowhub.errors import LoaderError
from knowhub.ingest.loaders.common import CharBudget, Limits, loader_error, pick_title
from knowhub.ingest.loaders.encoding import decode_document
from knowhub.ingest.loaders.markdown import escape_markdown, markdown_headings
from knowhub.models import LoadedDocument

__all__ = ["load_json"]


def load_json(path: Path, data: bytes, limits: Limits) -> LoadedDocument:
    """Load a JSON file as ``dotted.path: value`` lines.

    Args:
        path: the file.
        data: its bytes.
        limits: ``max_chars`` bounds the decoded and the rendered text (every line
            repeats its key path, so deep nesting renders much longer than the file).

    Returns:
        The document, titled by a top-level string ``title``, else its stem.

    Raises:
        LoaderError: the file is not valid JSON (the message gives line and column),
            or it renders to more than ``limits.max_chars``.
    """
    text, warnings = decode_document(data, path, max_chars=limits.max_chars)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise loader_error(
            path,
            f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}: "
            "fix the syntax there",
        ) from exc
    except RecursionError as exc:  # the reader recurses per level, as does the rendering
        raise _too_deep(path) from exc
    try:
        rendered = _render(value, CharBudget(path, limits))
    except RecursionError as exc:
        raise _too_deep(path) from exc
    declared = value.get("title") if isinstance(value, dict) else None
    return LoadedDocument(
        text=rendered,
        title=pick_title(path, declared if isinstance(declared, str) else None),
        format="json",
        headings=markdown_headings(rendered),
        line_map=None,  # one line per value, not the file's layout: cited by key path
        warnings=warnings,
    )


def _too_deep(path: Path) -> LoaderError:
    return loader_error(
        path,
        "nests arrays and objects deeper than Python's JSON reader goes (about "
        f"{sys.getrecursionlimit()} levels): flatten it",
    )


def _render(value: object, budget: CharBudget) -> str:
    if not isinstance(value, dict) or not any(_is_container(item) for item in value.values()):
        return "\n".join(map(budget.spend, _leaves("", value)))
    scalars = [
        budget.spend(line)
        for key, item in value.items()
        if not _is_container(item)
        for line in _leaves(key, item)
    ]
    sections = [
        f"# {' '.join(str(key).split())}\n\n" + "\n".join(map(budget.spend, _leaves(key, item)))
        for key, item in value.items()
        if _is_container(item)
    ]
    return "\n\n".join(["\n".join(scalars), *sections] if scalars else sections)


def _leaves(path: str, value: object) -> Iterator[str]:
    """``path: value`` lines for every scalar (or empty container) under ``value``."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(f"{path}.{key}" if path else str(key), item)
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(f"{path}[{index}]", item)
    else:
        yield escape_markdown(f"{path}: {_scalar(value)}" if path else _scalar(value))


def _scalar(value: object) -> str:
    if isinstance(value, str) and "\n" not in value:
        return value
    # JSON spelling for null/true/false/numbers; quoted when a string spans lines.
    return json.dumps(value, ensure_ascii=False)


def _is_container(value: object) -> bool:
    return isinstance(value, dict | list)
