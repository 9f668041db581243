"""The LLM transform cache is bounded, survives a damaged file, and checks answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowhub.ingest.transform_cache import TransformCache, transform_key
from knowhub.ingest.transforms import parse_enrichment


def test_answers_persist_and_the_oldest_go_past_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = TransformCache(path, max_entries=3)
    for n in range(5):
        cache.put(f"k{n}", f"a{n}")
    cache.close()
    reopened = TransformCache(path, max_entries=3)  # trimmed as it opens
    assert len(reopened) == 3
    assert [reopened.get(f"k{n}") for n in range(5)] == [None, None, "a2", "a3", "a4"]


def test_a_damaged_cache_file_is_set_aside_and_begun_anew(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    cache = TransformCache(path, max_entries=10)
    cache.put("k", "a")
    assert cache.get("k") == "a"
    assert (tmp_path / "cache.sqlite.damaged").exists()


def test_the_key_changes_with_model_prompt_version_and_text() -> None:
    base = transform_key("enrich", "openai:m", 1, "text")
    others = [
        transform_key("refine", "openai:m", 1, "text"),
        transform_key("enrich", "openai:n", 1, "text"),
        transform_key("enrich", "openai:m", 2, "text"),
        transform_key("enrich", "openai:m", 1, "text "),
    ]
    assert base not in others and len(set(others)) == 4


def test_an_enrichment_answer_is_checked_and_bounded() -> None:
    answer = {"title": " A  title ", "summary": "s", "keywords": "a, b,A, ", "question": "q?"}
    assert parse_enrichment(json.dumps(answer)) == {
        "title": "A title",
        "summary": "s",
        "question": "q?",
        "keywords": ["a", "b"],
    }
    for bad in (
        "no json",
        "[1]",
        json.dumps({**answer, "title": 3}),
        json.dumps({**answer, "keywords": []}),
    ):
        with pytest.raises(ValueError, match="answer"):
            parse_enrichment(bad)
