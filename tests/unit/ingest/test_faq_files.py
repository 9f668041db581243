"""FAQ files in every supported shape, and their errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from knowhub.answer.faq import match_faq
from knowhub.errors import IngestError
from knowhub.ingest.faq import load_faq
from knowhub.providers.stores.base import FaqEntry
from tests.helpers import write


def _pairs(path: Path) -> list[tuple[str, str, int]]:
    return [(p.question, p.answer, p.line) for p in load_faq(path, 10_000)]


def test_csv_tsv_json_and_markdown(tmp_path: Path) -> None:
    csv = write(tmp_path / "f.csv", "Question;Answer\nHow long?;35 days\n\nWho;Ops team\n")
    assert _pairs(csv) == [("How long?", "35 days", 2), ("Who", "Ops team", 4)]
    tsv = write(tmp_path / "f.tsv", "问题\t答案\n年假几天？\t15 天\n")
    assert _pairs(tsv) == [("年假几天？", "15 天", 2)]
    data = [{"question": "Вопрос?", "answer": "Ответ."}, {"q": "Q2", "a": "A2"}]
    assert _pairs(write(tmp_path / "f.json", json.dumps(data))) == [
        ("Вопрос?", "Ответ.", 1),
        ("Q2", "A2", 2),
    ]
    wrapped = write(tmp_path / "w.json", json.dumps({"faq": data[:1]}))
    assert len(load_faq(wrapped, 10_000)) == 1
    md = write(
        tmp_path / "f.md",
        "# FAQ\n\nIntro text.\n\n## How long are backups kept?\n\n"
        "35 days.\nLonger on request.\n\n## Contacts\n\nnot a question\n\n"
        "Q: Who runs backups?\nA: The ops team.\n",
    )
    assert _pairs(md) == [
        ("How long are backups kept?", "35 days.\nLonger on request.", 5),
        ("Who runs backups?", "The ops team.", 14),
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("a.csv", "title,body\nx,y\n", "a.csv:1: the header needs a 'question' and an 'answer'"),
        ("b.csv", "question,answer\nx,\n", "b.csv:2: the question or the answer is empty"),
        ("c.json", "{not json", "c.json: not valid JSON"),
        ("d.json", '{"a": 1}', "expected a list"),
        ("e.json", '[{"question": "x"}]', "item 0 needs a non-empty question and answer"),
        ("f.md", "# Just a heading\n\ntext\n", "no question/answer pairs found"),
        ("g.pdf", "x", "FAQ files are"),
    ],
)
def test_bad_faq_files_name_the_file_and_line(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    with pytest.raises(IngestError, match=message.replace("(", r"\(")):
        load_faq(write(tmp_path / name, content), 10_000)


def test_a_fifo_or_an_oversized_faq_file_is_refused_without_blocking(tmp_path: Path) -> None:
    # `faq import` read the file with read_bytes(): a FIFO blocked it forever.
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(IngestError, match=r"pipe.csv: is a FIFO \(named pipe\), not a regular"):
        load_faq(tmp_path / "pipe.csv", 10_000)
    big = write(tmp_path / "big.csv", "question,answer\n" + "q,a\n" * 100)
    with pytest.raises(IngestError, match="too large: 416 bytes > limit 100; raise ingest"):
        load_faq(big, 100)


def _entry(question: str, vector: list[float]) -> FaqEntry:
    v = np.asarray(vector, dtype=np.float32)
    return FaqEntry("faq.csv", question, f"answer to {question}", 2, v / np.linalg.norm(v))


def test_faq_matching_is_exact_then_words_then_meaning() -> None:
    entries = [_entry("How long are backups kept?", [1, 0]), _entry("Who owns the VPN?", [0, 1])]
    exact = match_faq("how long are BACKUPS kept", entries, None, 0.8, 0.95)
    assert exact is not None and (exact.by, exact.similarity) == ("exact", 1.0)
    words = match_faq("Backups: how long kept?", entries, None, 0.8, 0.95)
    assert words is not None and words.by == "words" and words.entry is entries[0]
    near = np.asarray([0.2, 0.98], dtype=np.float32)
    meaning = match_faq("Which team runs our VPN?", entries, near / np.linalg.norm(near), 0.8, 0.95)
    assert meaning is not None and meaning.by == "meaning" and meaning.entry is entries[1]
    assert match_faq("How long are logs kept?", entries, None, 0.8, 0.95) is None
    assert match_faq("anything", [], None, 0.8, 0.95) is None
