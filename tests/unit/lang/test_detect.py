import itertools
import random

import pytest

from knowhub.lang import detect, detect_language
from knowhub.lang.detect import SAMPLE_CHARS, query_language, span_languages


def test_han_text_is_chinese() -> None:
    assert detect_language("我们在北京大学学习自然语言处理。") == "zh"


def test_kana_make_cjk_text_japanese() -> None:
    assert detect_language("東京は日本の首都です。") == "ja"
    assert detect_language("カタカナだけ") == "ja"


def test_a_stray_kana_in_chinese_text_stays_chinese() -> None:
    assert detect_language("这家店的招牌上写着の字，但是整篇文章都是用中文写成的。") == "zh"


def test_hangul_cyrillic_and_latin_map_to_their_languages() -> None:
    assert detect_language("안녕하세요 세계") == "ko"
    assert detect_language("Резервные копии создаются каждую ночь.") == "ru"
    assert detect_language("Backups are taken every night.") == "en"


def test_text_without_letters_is_undetermined() -> None:
    assert detect_language("") == "und"
    assert detect_language("  2024-05-01 → 3.5 %!  ") == "und"


def test_the_script_with_most_letters_wins() -> None:
    assert detect_language("Python 是一种广泛用于数据科学和机器学习的编程语言。") == "zh"
    assert detect_language("The word 中文 means the Chinese language in Mandarin.") == "en"
    assert detect_language("Kubernetes кластер работает на трех узлах") == "ru"


def test_only_the_leading_sample_is_read() -> None:
    assert detect_language("a" * SAMPLE_CHARS + "中" * 10 * SAMPLE_CHARS) == "en"


SCRIPTS_SAMPLES = [
    "Backups are taken every night.",
    "Резервные копии создаются каждую ночь.",
    "我们在北京大学学习自然语言处理。",
    "カタカナだけ",
    "東京は日本の首都です。",
    "안녕하세요 세계",
    "  2024-05-01 → 3.5 %!  ",
    "Ελληνικά κείμενα",
]


def _spans(text: str, rng: random.Random) -> list[tuple[int, int]]:
    cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 6)))
    return list(itertools.pairwise([0, *cuts, len(text)]))


def test_span_languages_agree_with_detecting_each_span() -> None:
    rng = random.Random(5)
    for _ in range(300):
        pieces = rng.choices(SCRIPTS_SAMPLES, k=rng.randint(1, 4))
        same = rng.random() < 0.5  # one script repeated, or a mix
        text = " ".join([pieces[0]] * len(pieces) if same else pieces)
        text = text * rng.choice((1, 2, SAMPLE_CHARS // len(text) + 2))
        spans = _spans(text, rng)
        start, end = spans[0][0], spans[-1][1]
        expected = [detect_language(text[a:b]) for a, b in spans]
        assert span_languages(text, spans, start, end) == expected, (text[:80], spans)
    late = "1 " * SAMPLE_CHARS + "words after the sample"  # only its sample is read
    assert span_languages(late, [(0, len(late))], 0, len(late)) == ["und"]


def test_a_text_in_one_script_is_not_detected_span_by_span(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real = detect.detect_language

    def counting(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(detect, "detect_language", counting)
    english = "Backups are taken every night. 2024-05-01. " * 10
    spans = [(i, i + 43) for i in range(0, len(english), 43)]
    assert span_languages(english, spans, 0, len(english)) == ["en"] * 10
    assert calls == []
    mixed = english + "Резервные копии создаются каждую ночь."
    spans.append((len(english), len(mixed)))
    assert span_languages(mixed, spans, 0, len(mixed)) == ["en"] * 10 + ["ru"]
    assert len(calls) == 11  # a text mixing scripts: as before, each span on its own


def test_a_question_is_in_the_language_of_its_words_not_of_its_latin_names() -> None:
    # Commands, options and identifiers stay in Latin inside a Russian or Chinese question.
    assert query_language("квоты usrquota") == "ru"
    assert query_language("如何配置 nginx") == "zh"
    assert query_language("Как настроить nginx reverse proxy") == "ru"
    assert query_language("что делает ls -la /etc/fstab") == "ru"
    assert query_language("怎么用 git rebase --onto 改写历史") == "zh"


def test_a_question_in_latin_words_with_a_foreign_term_stays_english() -> None:
    assert query_language("what does квоты mean") == "en"
    assert query_language("how do I type 你好 in vim") == "en"
    assert query_language("usrquota grpquota") == "en"
    assert query_language("2024-05-01") == "und"


def test_a_question_in_one_script_is_what_detect_language_says() -> None:
    for text in SCRIPTS_SAMPLES:
        assert query_language(text) == detect_language(text)
