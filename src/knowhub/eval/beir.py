"""BEIR-layout data sets: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Errors name the file and line: a broken data set must never read as a zero score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence, Set
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
    """Read a BEIR folder, checking every judgment against the corpus and the queries.

    A judged query must have text in queries.jsonl and at least one judgment > 0, and
    every judged document must be in corpus.jsonl: otherwise it could only score zero.
    """
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder; give a BEIR data set folder")
    corpus = _read_jsonl(folder / "corpus.jsonl", ("_id", "text"))
    queries = {q["_id"]: q["text"] for q in _read_jsonl(folder / "queries.jsonl", ("_id", "text"))}
    doc_ids = {doc["_id"] for doc in corpus}
    qrels = _read_qrels(folder / "qrels" / f"{split}.tsv", doc_ids, queries)
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


def _read_qrels(
    path: Path, doc_ids: Set[str], queries: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    if not path.is_file():
        splits = sorted(p.stem for p in path.parent.glob("*.tsv")) or ["none"]
        raise ConfigError(
            f"{path}: missing; choose a split that has a qrels file (found: {', '.join(splits)})"
        )
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[str, int] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        parts = line.split("\t")
        if (number == 1 and parts[0] == "query-id") or not line.strip():
            continue
        if len(parts) != 3 or not parts[2].strip().lstrip("-").isdigit():
            raise ConfigError(
                f"{path}:{number}: expected 'query-id<TAB>corpus-id<TAB>score', got {line!r}"
            )
        qid, doc_id = parts[0], parts[1]
        if qid not in queries:
            raise ConfigError(f"{path}:{number}: query {qid!r} has no text in queries.jsonl")
        if doc_id not in doc_ids:
            raise ConfigError(f"{path}:{number}: document {doc_id!r} is not in corpus.jsonl")
        qrels.setdefault(qid, {})[doc_id] = int(parts[2])
        first_line.setdefault(qid, number)
    for qid, judged in qrels.items():
        if max(judged.values()) <= 0:
            raise ConfigError(
                f"{path}:{first_line[qid]}: query {qid!r} has no judgment above 0, so nothing "
                "could count as found; drop it or fix its scores"
            )
    if not qrels:
        raise ConfigError(f"{path}: no judgments; a qrels file needs at least one line")
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
