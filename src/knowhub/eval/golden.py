"""Golden files: hand-written questions with the sources (or chunks) that answer them.

A golden file is a JSON list; each entry is an object::

    {"query": "How often are backups taken?",
     "expected_sources": ["en/deployment-guide.md"],      # or "expected_chunk_ids": [...]
     "expected_keywords": ["every 6 hours", "35 days"],   # optional
     "id": "backups",                                       # optional; default q1, q2, ...
     "collection": "handbook"}                              # optional: only for this one

An answer evaluation (``knowhub eval --answers``) reads the same entries as answer cases,
with more optional fields::

     "expected_hit_type": "rag",          # faq_direct | rag | insufficient_context
     "must_not_say": ["every 12 hours"],  # phrases the answer must not contain
     "group": "en",                       # the report's group (default: the file's stem)
     "expected_section": "Backups",       # in the cited chunk's section path
     "expected_page": 12,                 # or [12, 14]: the cited chunk's PDF page (1-based)

``expected_keywords`` are then looked for in the answer and ``expected_sources`` among the
sources it cites. An entry with ``expected_hit_type`` needs no expected sources (a question
the documents cannot answer has none); a retrieval run leaves such entries out. The place
(``expected_section``, ``expected_page``) is where in an expected source the answer should
cite, so it needs ``expected_sources``.

Sources are compared with ``hit.source`` (the path relative to the folder ingested). Cases
saved from a trace name the trace's collection, so one file serves every collection: a run on
a collection judges the entries naming it and those naming none.
Every mistake is an error naming the file, the line of the entry, its id and the field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from knowhub.errors import ConfigError
from knowhub.eval.sets import EvalSet, JudgedQuery

__all__ = ["HIT_TYPES", "AnswerCase", "add_case", "golden_set", "load_answer_cases", "load_golden"]

FIELDS = (
    "id",
    "query",
    "expected_sources",
    "expected_chunk_ids",
    "expected_keywords",
    "expected_hit_type",
    "must_not_say",
    "group",
    "expected_section",
    "expected_page",
    "notes",
    "collection",
)
SHAPE = 'a JSON list of {"query", "expected_sources" | "expected_chunk_ids", "expected_keywords"?}'
HIT_TYPES = ("faq_direct", "rag", "insufficient_context")
"""The ``hit_type`` values an answer case may expect (a greeting's ``chat`` is not judged)."""


@dataclass(frozen=True)
class AnswerCase:
    """One golden entry as an answer evaluation reads it: what the answer should be
    (``hit_type``), say (``keywords``), cite (``sources``, at ``section`` and ``pages``, the
    first and last page) and never say (``must_not_say``); each empty or None when the entry
    does not say. ``group`` is the report's group ("": the run's name)."""

    qid: str
    text: str
    line: int
    hit_type: str | None = None
    keywords: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    must_not_say: tuple[str, ...] = ()
    group: str = ""
    section: str | None = None
    pages: tuple[int, int] | None = None

    @property
    def answerable(self) -> bool:
        """Whether the documents answer it (every case but an expected refusal)."""
        return self.hit_type != "insufficient_context"


@dataclass(frozen=True)
class _Entry:
    """A checked entry: its retrieval judgment (None: it judges answers only) and its case."""

    query: JudgedQuery | None
    case: AnswerCase


def golden_set(path: Path, collection: str | None = None) -> EvalSet:
    """An :class:`EvalSet` of the golden file's queries (no corpus: the collection is used);
    with ``collection``, those for it (naming it, or no collection)."""
    return EvalSet(path.stem, path, load_golden(path, collection))


def load_golden(path: Path, collection: str | None = None) -> list[JudgedQuery]:
    """Read and check a golden file (every entry), keeping the retrieval judgments of the
    entries for ``collection`` (an entry expecting only an answer has none)."""
    entries = _load(path, collection)
    queries = [entry.query for entry in entries if entry.query is not None]
    if not queries:
        raise ConfigError(
            f"{path}: no entry expects sources or chunks to be found, so there is no retrieval "
            "to measure; evaluate its answers with `knowhub eval --answers`, or add "
            '"expected_sources"'
        )
    return queries


def load_answer_cases(path: Path, collection: str | None = None) -> list[AnswerCase]:
    """Read and check a golden file (every entry): the answer cases for ``collection``."""
    return [entry.case for entry in _load(path, collection)]


def _load(path: Path, collection: str | None) -> list[_Entry]:
    if not path.is_file():
        raise ConfigError(f"{path}: no such file; give a golden JSON file or a BEIR folder")
    text = path.read_text(encoding="utf-8-sig")
    kept: list[_Entry] = []
    seen: set[str] = set()
    others = 0
    for number, (line, entry) in enumerate(_entries(text, path), start=1):
        where = f"{path}:{line}: entry {number}"
        checked = _entry(entry, where, f"q{number}", line, path.stem)
        if checked.case.qid in seen:
            raise ConfigError(f"{where} repeats id {checked.case.qid!r}")
        seen.add(checked.case.qid)
        named = _collection(entry, where)
        if collection is not None and named not in (None, collection):
            others += 1
            continue
        kept.append(checked)
    if not kept and others:
        raise ConfigError(
            f"{path}: no entry for collection {collection!r} ({others} for others): save "
            "cases from its traces, or add entries naming it"
        )
    if not kept:
        raise ConfigError(f"{path}: the list is empty; add at least one entry ({SHAPE})")
    return kept


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


def _entry(entry: Any, where: str, default_id: str, line: int, group: str) -> _Entry:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} is not an object; expected {SHAPE}")
    qid = str(entry.get("id", default_id))
    where += f" ({qid!r})" if "id" in entry else ""
    unknown = sorted(set(entry) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; known: {', '.join(FIELDS)}")
    query = entry.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ConfigError(f'{where} has no "query" (a non-empty string)')
    sources = _strings(entry, "expected_sources", where)
    chunks = _strings(entry, "expected_chunk_ids", where)
    hit_type = _hit_type(entry, where, bool(sources))
    if (sources and chunks) or not (sources or chunks or hit_type):
        raise ConfigError(
            f'{where} needs exactly one of "expected_sources" or "expected_chunk_ids" '
            '(a non-empty list of strings), or an "expected_hit_type" for an answer case'
        )
    keywords = tuple(_strings(entry, "expected_keywords", where))
    case = AnswerCase(
        qid,
        query,
        line,
        hit_type,
        keywords,
        tuple(sources),
        tuple(_strings(entry, "must_not_say", where)),
        _name(entry, "group", where) or group,
        _name(entry, "expected_section", where),
        _pages(entry, where),
    )
    if (case.section or case.pages) and not sources:
        field = "expected_section" if case.section else "expected_page"
        raise ConfigError(
            f'{where}: "{field}" is a place in an expected source, but the entry has no '
            '"expected_sources"; add the document it is in'
        )
    unit: Literal["source", "chunk"] = "source" if sources else "chunk"
    relevant = dict.fromkeys(sources or chunks, 1)
    judged = JudgedQuery(qid, query, relevant, unit, keywords, line) if relevant else None
    return _Entry(judged, case)


def _hit_type(entry: dict[str, Any], where: str, has_sources: bool) -> str | None:
    """The entry's ``expected_hit_type``, checked (None when it has none)."""
    value = entry.get("expected_hit_type")
    if value is None:
        return None
    if value not in HIT_TYPES:
        raise ConfigError(
            f'{where}: "expected_hit_type" is {value!r}; use one of {", ".join(HIT_TYPES)}'
        )
    if has_sources and value != "rag":
        raise ConfigError(
            f'{where}: "expected_sources" with "expected_hit_type" {value!r}, an answer that '
            'cites no source; drop "expected_sources" or expect "rag"'
        )
    return str(value)


def _name(entry: dict[str, Any], key: str, where: str) -> str | None:
    """A non-empty string field, stripped (None when the entry has none)."""
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f'{where}: "{key}" must be a non-empty string, got {value!r}')
    return value.strip()


def _pages(entry: dict[str, Any], where: str) -> tuple[int, int] | None:
    """``expected_page`` as (first, last): a page number, or a [first, last] pair."""
    value = entry.get("expected_page")
    if value is None:
        return None
    pair = [value, value] if not isinstance(value, list) else value
    numbers = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in pair)
    if len(pair) != 2 or not numbers or pair[0] > pair[1]:
        raise ConfigError(
            f'{where}: "expected_page" is {value!r}; give a page number (1-based) or '
            "[first, last] with first <= last"
        )
    return pair[0], pair[1]


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
