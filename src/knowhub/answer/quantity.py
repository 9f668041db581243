"""Questions that ask for a quantity, and sentences that give one.

"How many connection slots are reserved for superusers?", "Сколько серверов имён можно
указать?", "返回的退出码是多少？" are answered by a sentence holding a number ("The default
value is three connections", "до MAXNS (в настоящее время 3)", "退出状态为 124"), which
often shares fewer of the question's words than the sentence defining the setting next to
it: on the real-document sets (docs/benchmarks.md) a third of the answers that missed their
keyword quoted that definition and not the value. The expected answer type is the oldest
device of question answering (Moldovan et al. 2000, "The structure and performance of an
open-domain question answering system"); here only the one type that words can tell.
"""

from __future__ import annotations

import re

__all__ = ["asks_quantity", "gives_quantity"]

_ASKS = re.compile(
    r"\bhow\s+(?:many|much|long|big|large|often|far|old|soon)\b"
    r"|\b(?:what|which)\s+(?:\w+\s+){0,3}?(?:port|size|limit|number|exit\s+(?:code|status))\b"
    r"|(?<![а-яё])сколько|как\s+долго|какого\s+размера"  # not несколько ("several")
    r"|какой\s+(?:\w+\s+){0,3}?(?:размер|порт|лимит|предел)"
    r"|каково\s+(?:\w+\s+)?(?:число|количество|значение)"
    r"|多少|多久|多长|多大|几(?![乎何])",  # not 几乎 ("almost"), 几何 ("geometry")
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "two three four five six seven eight nine ten eleven twelve fifteen twenty thirty "
    "forty fifty sixty hundred thousand million twice "
    "два две двух три трёх трех четыре четырёх четырех пять "
    "пяти шесть шести семь семи восемь восьми девять девяти десять десяти сто тысяча тысячи"
)
# "one", "once", "один", "一个" are left out: far more often an article or "one of" than a
# value ("Once the job ends", "одна из", "这是一个工具").
_GIVES = re.compile(
    r"(?<![\w-])[+-]?\d"  # not inside a name: UTF-8, python3, ext4, IPv4, sda1
    rf"|\b(?:{'|'.join(_NUMBER_WORDS.split())})\b"
    r"|(?!一个)[零一二两三四五六七八九十百千万]+\s*(?:个|天|秒|分钟|小时|位|字节|次|年|月|周|倍)",
    re.IGNORECASE,
)

_REFERENCE = re.compile(r"(?<=\w)\(\d\w*\)")
# A version is no quantity either: "(начиная с Linux 2.6.35)" heads many entries of
# manpages-ru, "since glibc 2.3.2", "PostgreSQL 15.4".
_VERSION = re.compile(
    r"\b(?:Linux|glibc|version|версии|версия|PostgreSQL|Python)\s+\d+(?:\.\d+)*"
    r"|\b\d+(?:\.\d+){2,}\b",
    re.IGNORECASE,
)


def asks_quantity(question: str) -> bool:
    """Whether ``question`` asks how many, how much, how long, which port or size…"""
    return bool(_ASKS.search(question))


def gives_quantity(sentence: str) -> bool:
    """Whether ``sentence`` states a number: digits, or a number written as a word; a
    manual page's section (``hosts(5)``) or a version (``Linux 2.6.35``) is not one."""
    return bool(_GIVES.search(_VERSION.sub("", _REFERENCE.sub("", sentence))))
