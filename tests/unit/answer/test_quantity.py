"""A question asking a quantity is answered by the sentence stating it, in en, ru and zh."""

from __future__ import annotations

import pytest

from knowhub.answer.extractive import extractive_answer
from knowhub.answer.quantity import asks_quantity, gives_quantity
from tests.answer_helpers import source


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How many connection slots are reserved for superusers?", True),
        ("How long does a job wait in the queue?", True),
        ("Which port does the server listen on?", True),
        ("Сколько серверов имён можно указать в resolv.conf?", True),
        ("Какой максимальный размер канала по умолчанию?", True),
        ("timeout 超时以后返回的退出码是多少？", True),
        ("密码至少要几位？", True),
        ("How do I cancel a job scheduled with at?", False),
        ("What is the default port of the server?", True),
        ("Как указать несколько серверов имён?", False),  # несколько: "several"
        ("这几乎不可能吗？", False),  # 几乎: "almost"
        ("Как отключить заставку при запуске?", False),
        ("怎样限制 ssh 登录？", False),
    ],
)
def test_questions_asking_a_quantity_are_told_apart(question: str, asks: bool) -> None:
    assert asks_quantity(question) is asks


@pytest.mark.parametrize(
    ("sentence", "gives"),
    [
        ("The default value is three connections.", True),
        ("По умолчанию 1048576 байт.", True),
        ("До трёх серверов имён.", True),
        ("退出状态为 124。", True),
        ("等待四天以后再提醒。", True),
        ("统一配置所有机器。", False),  # a numeral inside a word, no measure word after it
        ("至少 5 个字符", True),
        ("See also hosts(5) and resolver(3).", False),  # manual sections are no values
        ("/proc/sys/fs/pipe-max-size (начиная с Linux 2.6.35) Максимальный размер", False),
        ("Added in version 3.11 of the library.", False),  # nor are versions
        ("The value must be less than max_connections.", False),
        ("Once the job ends, one of the files is removed.", False),  # an article, no value
        ("这是一个工具。", False),
        ("Save it as UTF-8 for python3 on ext4.", False),  # digits inside names
        ("The default is +1, one minute from now.", True),
    ],
)
def test_sentences_stating_a_number_are_told_apart(sentence: str, gives: bool) -> None:
    assert gives_quantity(sentence) is gives


def test_the_value_later_in_the_best_sentences_paragraph_is_quoted_with_it() -> None:
    # postgresql's superuser_reserved_connections: the value is four sentences down, and
    # another source's sentence about connections states a number too.
    entry = source(
        "Determines the number of connection slots that are reserved for connections by "
        "superusers. At most max_connections connections can ever be active simultaneously. "
        "Whenever the number of active concurrent connections is at least max_connections "
        "minus the reserved slots, new connections will be accepted only for superusers. "
        "The default value is three connections. The value must be less than max_connections."
    )
    answer = extractive_answer(
        "How many connection slots are reserved for superusers by default?", [entry], 1
    )
    assert "three connections" in answer
    asked_otherwise = extractive_answer("What are reserved connection slots for?", [entry], 1)
    assert "three" not in asked_otherwise  # no quantity asked: the best sentence alone


def test_a_value_a_paragraph_down_in_the_same_entry_is_quoted_too() -> None:
    # pipe(7) in Russian: the entry's default is in its second paragraph, and its first
    # line's "Linux 2.6.35" is a version, not the value asked for.
    entry = source(
        "/proc/sys/fs/pipe-max-size (начиная с Linux 2.6.35) Максимальный размер (в байтах) "
        "отдельных каналов, который может быть установлен пользователем без мандата "
        "CAP_SYS_RESOURCE. Значение может округлиться в большую сторону.\n\n"
        "Значение по умолчанию равно 1048576 (1 МиБ).\n\n"
        "Ещё один абзац: 4096 байт на страницу."
    )
    question = "Какой максимальный размер канала может выставить пользователь без CAP_SYS_RESOURCE?"
    answer = extractive_answer(question, [entry], 1)
    assert "1048576" in answer and "4096" not in answer
