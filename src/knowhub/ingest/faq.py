"""FAQ files: question → answer pairs from CSV, JSON or Markdown.

* CSV/TSV: a header row with a question column (``question``, ``q``, ``问题``,
  ``вопрос``) and an answer column (``answer``, ``a``, ``答案``, ``回答``, ``ответ``).
* JSON: a list of ``{"question": …, "answer": …}`` objects (or ``{"faq": [...]}``).
* Markdown/text: each heading ending in ``?``/``？`` is a question and the text under it
  its answer; or ``Q:``/``A:`` line pairs (also ``问：``/``答：``, ``В:``/``О:``).

Every problem names the file (and line) and what to fix.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from knowhub.errors import IngestError
from knowhub.ingest.loaders.encoding import decode_text, normalize_newlines
from knowhub.ingest.loaders.reading import open_regular

__all__ = ["FAQ_SUFFIXES", "FaqPair", "load_faq"]

FAQ_SUFFIXES = (".csv", ".tsv", ".json", ".md", ".markdown", ".txt")
_QUESTION_COLUMNS = ("question", "questions", "q", "问题", "问", "вопрос")
_ANSWER_COLUMNS = ("answer", "answers", "a", "答案", "回答", "答", "ответ")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_Q_LINE = re.compile(r"^\s*(?:Q|Question|问|В|Вопрос)\s*[:：]\s*(.+)$", re.IGNORECASE)
_A_LINE = re.compile(r"^\s*(?:A|Answer|答|О|Ответ)\s*[:：]\s*(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class FaqPair:
    question: str
    answer: str
    line: int  # where the question is, 1-based (the row for CSV, the index + 1 for JSON)


def load_faq(path: Path, max_bytes: int) -> list[FaqPair]:
    """The question/answer pairs of ``path`` (at most ``max_bytes`` long, a regular file:
    a FIFO would block the read forever); at least one, or an IngestError."""
    suffix = path.suffix.lower()
    if suffix not in FAQ_SUFFIXES:
        raise IngestError(
            f"{path}: FAQ files are {', '.join(FAQ_SUFFIXES)}; got {suffix or 'no extension'}"
        )
    try:
        with open_regular(path) as file:
            data = file.read(max_bytes)
        text = normalize_newlines(decode_text(data, path))
    except OSError as exc:
        raise IngestError(f"{path}: cannot read it ({exc})") from exc
    if suffix in (".csv", ".tsv"):
        pairs = _from_csv(path, text)
    elif suffix == ".json":
        pairs = _from_json(path, text)
    else:
        pairs = _from_markdown(text)
    if not pairs:
        raise IngestError(
            f"{path}: no question/answer pairs found; see `knowhub faq import --help` for "
            "the formats"
        )
    return pairs


def _from_csv(path: Path, text: str) -> list[FaqPair]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else _sniff(text)
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        return []
    header = [cell.strip().lower() for cell in rows[0]]
    q = next((i for i, name in enumerate(header) if name in _QUESTION_COLUMNS), None)
    a = next((i for i, name in enumerate(header) if name in _ANSWER_COLUMNS), None)
    if q is None or a is None:
        raise IngestError(
            f"{path}:1: the header needs a 'question' and an 'answer' column, got {rows[0]}"
        )
    pairs = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if max(q, a) >= len(row) or not row[q].strip() or not row[a].strip():
            raise IngestError(f"{path}:{number}: the question or the answer is empty: {row}")
        pairs.append(FaqPair(row[q].strip(), row[a].strip(), number))
    return pairs


def _sniff(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text[:4096], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _from_json(path: Path, text: str) -> list[FaqPair]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise IngestError(f"{path}: not valid JSON ({exc})") from exc
    if isinstance(data, dict) and isinstance(data.get("faq"), list):
        data = data["faq"]
    if not isinstance(data, list):
        raise IngestError(f'{path}: expected a list of {{"question": ..., "answer": ...}} objects')
    pairs = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise IngestError(f"{path}: item {index} is not an object")
        question = str(item.get("question") or item.get("q") or "").strip()
        answer = str(item.get("answer") or item.get("a") or "").strip()
        if not question or not answer:
            raise IngestError(f"{path}: item {index} needs a non-empty question and answer")
        pairs.append(FaqPair(question, answer, index + 1))
    return pairs


def _from_markdown(text: str) -> list[FaqPair]:
    pairs: list[FaqPair] = []
    question: tuple[str, int] | None = None
    answer: list[str] = []

    def close() -> None:
        if question is not None and "\n".join(answer).strip():
            pairs.append(FaqPair(question[0], "\n".join(answer).strip(), question[1]))

    for number, line in enumerate(text.split("\n"), start=1):
        asked = _Q_LINE.match(line)
        found = _HEADING.match(line) or asked
        if found:
            title = found.group(1).strip()
            close()
            if asked or title.endswith(("?", "？")):
                question, answer = (title, number), []
            else:
                question, answer = None, []  # a section heading, not a question
            continue
        if question is None:
            continue
        replied = _A_LINE.match(line)
        answer.append(replied.group(1) if replied and not answer else line)
    close()
    return pairs
