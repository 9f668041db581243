"""benchmarks/crosslingual.py's own logic: the same-id alignment of the xquad languages is
checked (not assumed), and each golden entry pairs one language's question with the other
language's paragraph file.

Built on a tiny fabricated BEIR layout; no retrieval is run (the numbers are in
docs/benchmarks.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks.crosslingual import (
    article_split,
    check_aligned,
    golden_entries,
    spread,
    write_all,
)
from benchmarks.crosslingual_mixed import setting_of

from knowhub.eval.beir import load_dataset

TEXT = {
    "en": (["The cat sat.", "Rain in Paris."], ["Where did the cat sit?", "Where does it rain?"]),
    "ru": (["Кот сидел.", "Дождь в Париже."], ["Где сидел кот?", "Где идёт дождь?"]),
    "zh": (["猫坐着。", "巴黎下雨。"], ["猫坐在哪里？", "哪里下雨？"]),
}


def fabricate(root: Path, lang: str, qrels: list[tuple[str, str]] | None = None) -> Path:
    """An xquad-<lang> folder: paragraphs 0-0 and 0-1, questions qa (→ 0-0) and qb (→ 0-1)."""
    folder = root / f"xquad-{lang}"
    (folder / "qrels").mkdir(parents=True)
    passages, questions = TEXT[lang]
    corpus = [{"_id": f"0-{i}", "title": "", "text": t} for i, t in enumerate(passages)]
    queries = [{"_id": qid, "text": t} for qid, t in zip(("qa", "qb"), questions, strict=True)]
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        lines = [json.dumps(row, ensure_ascii=False) for row in rows]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    pairs = qrels or [("qa", "0-0"), ("qb", "0-1")]
    body = "".join(f"{q}\t{d}\t1\n" for q, d in pairs)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + body)
    return folder


def test_a_question_gets_the_other_languages_paragraph_of_the_same_id(tmp_path: Path) -> None:
    zh, en = (load_dataset(fabricate(tmp_path, lang)) for lang in ("zh", "en"))
    assert check_aligned({"en": en, "zh": zh}) == ["qa", "qb"]
    assert golden_entries(zh, en, ["qb"]) == [
        {"id": "qb", "query": "哪里下雨？", "expected_sources": ["0-1.md"]}
    ]


def test_languages_judging_a_question_differently_are_refused(tmp_path: Path) -> None:
    en = load_dataset(fabricate(tmp_path, "en"))
    ru = load_dataset(fabricate(tmp_path, "ru", [("qa", "0-1"), ("qb", "0-1")]))
    with pytest.raises(ValueError, match="question qa is judged against other paragraphs"):
        check_aligned({"en": en, "ru": ru})


def test_the_limit_spreads_over_every_article() -> None:
    ids = [f"q{i}" for i in range(10)]
    assert spread(ids, 4) == ["q0", "q2", "q5", "q7"]
    assert spread(ids, 0) == ids
    assert spread(ids, 50) == ids


def test_write_all_writes_nine_golden_files_each_split_and_three_corpora(tmp_path: Path) -> None:
    for lang in ("en", "ru", "zh"):
        fabricate(tmp_path / "sets", lang)
    written = write_all(tmp_path / "sets", tmp_path / "out", limit=1)
    assert len(written) == 27  # all, dev, test for each of the 9 pairs
    golden = json.loads((tmp_path / "out/golden/xling-ru-zh.json").read_text(encoding="utf-8"))
    assert golden == [{"id": "qa", "query": "Где сидел кот?", "expected_sources": ["0-0.md"]}]
    assert (tmp_path / "out/corpus/zh/0-0.md").read_text(encoding="utf-8") == "猫坐着。\n"
    again = (tmp_path / "out/golden/xling-ru-zh.json").read_bytes()
    write_all(tmp_path / "sets", tmp_path / "out", limit=1)
    assert (tmp_path / "out/golden/xling-ru-zh.json").read_bytes() == again


def test_dev_holds_even_articles_and_test_odd_ones() -> None:
    entries = [
        {"id": q, "query": q, "expected_sources": [f"{article}-0.md"]}
        for q, article in (("a", 0), ("b", 1), ("c", 2), ("d", 13))
    ]
    assert [e["id"] for e in article_split(entries, "dev")] == ["a", "c"]
    assert [e["id"] for e in article_split(entries, "test")] == ["b", "d"]


def test_the_mixed_benchmark_reads_a_setting_for_its_on_run() -> None:
    assert setting_of("search.cross_lingual_home=0.5") == ("search.cross_lingual_home", 0.5)
    assert setting_of("search.fusion=rrf") == ("search.fusion", "rrf")
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        setting_of("0.5")
