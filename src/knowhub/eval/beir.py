"""BEIR-layout data sets: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Errors name the file and line: a broken data set must never read as a zero score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowhub.errors import ConfigError

__all__ = ["Dataset", "load_dataset", "materialize", "safe_name"]


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus: list[dict[str, Any]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_dataset(folder: Path, split: str = "test") -> Dataset:
    """Read a BEIR folder; every judged query must exist in queries.jsonl."""
    corpus = _read_jsonl(folder / "corpus.jsonl", ("_id", "text"))
    queries = {q["_id"]: q["text"] for q in _read_jsonl(folder / "queries.jsonl", ("_id", "text"))}
    qrels = _read_qrels(folder / "qrels" / f"{split}.tsv")
    for qid in qrels:
        if qid not in queries:
            raise ConfigError(f"{folder / 'qrels' / f'{split}.tsv'}: query {qid!r} has no text "
                              "in queries.jsonl")  # fmt: skip
    return Dataset(folder.name, corpus, queries, qrels)


def _read_jsonl(path: Path, required: Sequence[str]) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(
            f"{path}: missing; a BEIR folder needs corpus.jsonl, queries.jsonl, qrels/"
        )
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{number}: not JSON ({exc.msg})") from exc
            missing = [key for key in required if key not in row]
            if missing:
                raise ConfigError(f"{path}:{number}: missing {', '.join(missing)}")
            row["_id"] = str(row["_id"])
            rows.append(row)
    return rows


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    if not path.is_file():
        raise ConfigError(f"{path}: missing; choose a split that has a qrels file")
    qrels: dict[str, dict[str, int]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        parts = line.split("\t")
        if number == 1 and parts[0] == "query-id":
            continue
        if len(parts) != 3 or not parts[2].strip().lstrip("-").isdigit():
            raise ConfigError(f"{path}:{number}: expected 'query-id<TAB>corpus-id<TAB>score', "
                              f"got {line!r}")  # fmt: skip
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return qrels


def safe_name(doc_id: str) -> str:
    """A file-name-safe form of a document id."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", doc_id)


def materialize(corpus: Sequence[Mapping[str, Any]], folder: Path) -> dict[str, str]:
    """Write each document as ``<id>.md`` (``# title`` + text), untouched if already there.

    Returns file stem → document id.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stems: dict[str, str] = {}
    for doc in corpus:
        stem = safe_name(doc["_id"])
        if stem in stems:
            raise ConfigError(f"document ids {stems[stem]!r} and {doc['_id']!r} share a file name")
        stems[stem] = doc["_id"]
        title = str(doc.get("title") or "").strip()
        text = f"# {title}\n\n{doc['text']}\n" if title else f"{doc['text']}\n"
        path = folder / f"{stem}.md"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return stems
