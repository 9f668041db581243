"""Golden files: hand-written questions with the sources (or chunks) that answer them.

A golden file is a JSON list; each entry is an object::

    {"query": "How often are backups taken?",
     "expected_sources": ["en/deployment-guide.md"],      # or "expected_chunk_ids": [...]
     "expected_keywords": ["every 6 hours", "35 days"],   # optional
     "id": "backups",                                       # optional; default q1, q2, ...
     "collection": "handbook"}                              # optional: only for this one

Sources are compared with ``hit.source`` (the path relative to the folder ingested). Cases
saved from a trace name the trace's collection, so one file serves every collection: a run on
a collection judges the entries naming it and those naming none.
Every mistake is an error naming the file and the line of the entry.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from knowhub.errors import ConfigError
from knowhub.eval.sets import EvalSet, JudgedQuery

__all__ = ["add_case", "golden_set", "load_golden"]

FIELDS = (
    "id",
    "query",
    "expected_sources",
    "expected_chunk_ids",
    "expected_keywords",
    "notes",
    "collection",
)
SHAPE = 'a JSON list of {"query", "expected_sources" | "expected_chunk_ids", "expected_keywords"?}'


def golden_set(path: Path, collection: str | None = None) -> EvalSet:
    """An :class:`EvalSet` of the golden file's queries (no corpus: the collection is used);
    with ``collection``, those for it (naming it, or no collection)."""
    return EvalSet(path.stem, path, load_golden(path, collection))


def load_golden(path: Path, collection: str | None = None) -> list[JudgedQuery]:
    """Read and check a golden file (every entry), keeping those for ``collection``."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file; give a golden JSON file or a BEIR folder")
    text = path.read_text(encoding="utf-8-sig")
    queries: list[JudgedQuery] = []
    others = 0
    for number, (line, entry) in enumerate(_entries(text, path), start=1):
        where = f"{path}:{line}: entry {number}"
        query = _entry(entry, where, f"q{number}", line)
        if any(q.qid == query.qid for q in queries):
            raise ConfigError(f"{path}:{line}: entry {number} repeats id {query.qid!r}")
        named = _collection(entry, where)
        if collection is not None and named not in (None, collection):
            others += 1
            continue
        queries.append(query)
    if not queries and others:
        raise ConfigError(
            f"{path}: no entry for collection {collection!r} ({others} for others): save "
            "cases from its traces, or add entries naming it"
        )
    if not queries:
        raise ConfigError(f"{path}: the list is empty; add at least one entry ({SHAPE})")
    return queries


def _collection(entry: dict[str, Any], where: str) -> str | None:
    value = entry.get("collection")
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(f'{where}: "collection" must be a collection name')
    return value


def _entries(text: str, path: Path) -> list[tuple[int, Any]]:
    """The top-level list's items, each with the line it starts on."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected {SHAPE}, got a JSON {type(data).__name__}")
    decoder, out = json.JSONDecoder(), []
    position, line, counted = text.index("[") + 1, 1, 0
    for _ in data:
        while text[position] in " \t\r\n,":
            position += 1
        line, counted = line + text.count("\n", counted, position), position
        value, position = decoder.raw_decode(text, position)
        out.append((line, value))
    return out


def _entry(entry: Any, where: str, default_id: str, line: int) -> JudgedQuery:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} is not an object; expected {SHAPE}")
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; known: {', '.join(FIELDS)}")
    query = entry.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ConfigError(f'{where} has no "query" (a non-empty string)')
    sources = _strings(entry, "expected_sources", where)
    chunks = _strings(entry, "expected_chunk_ids", where)
    if bool(sources) == bool(chunks):
        raise ConfigError(
            f'{where} needs exactly one of "expected_sources" or "expected_chunk_ids" '
            "(a non-empty list of strings)"
        )
    keywords = tuple(_strings(entry, "expected_keywords", where))
    qid = str(entry.get("id", default_id))
    if sources:
        return JudgedQuery(qid, query, dict.fromkeys(sources, 1), "source", keywords, line)
    return JudgedQuery(qid, query, dict.fromkeys(chunks, 1), "chunk", keywords, line)


def _strings(entry: dict[str, Any], key: str, where: str) -> Sequence[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f'{where}: "{key}" must be a list of non-empty strings')
    if key in entry and not value:
        raise ConfigError(f'{where}: "{key}" is empty; list at least one')
    return [v.strip() for v in value]


def add_case(
    path: Path, query: str, expected_source: str, collection: str | None = None
) -> tuple[str, bool]:
    """Add ``query`` → ``expected_source`` (asked of ``collection``) to the golden file
    (created if missing).

    A query already in the file for that collection gains the source instead of a second
    entry. Returns the entry's id and whether it is new.
    """
    entries: list[dict[str, Any]] = []
    if path.exists():
        load_golden(path)  # refuse to extend a file that is already broken
        entries = json.loads(path.read_text(encoding="utf-8-sig"))
    for entry in entries:
        same = entry.get("query", "").strip() == query.strip()
        if same and entry.get("collection") == collection:
            sources = entry.setdefault("expected_sources", [])
            if expected_source not in sources:
                sources.append(expected_source)
            _write(path, entries)
            return str(entry.get("id", f"q{entries.index(entry) + 1}")), False
    ids = {str(e.get("id", f"q{i}")) for i, e in enumerate(entries, start=1)}
    number = len(entries) + 1
    while f"case-{number}" in ids:
        number += 1
    case = {"id": f"case-{number}", "query": query.strip(), "expected_sources": [expected_source]}
    entries.append(case if collection is None else {**case, "collection": collection})
    _write(path, entries)
    return f"case-{number}", True


def _write(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(entries, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
