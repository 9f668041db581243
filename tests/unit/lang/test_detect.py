from knowhub.lang import detect_language
from knowhub.lang.detect import SAMPLE_CHARS


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
