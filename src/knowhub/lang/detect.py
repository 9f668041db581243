"""Guess a text's language from the script most of its letters are written in.

Script counting is all lexical search needs: the tokenizer works per script run
anyway, and the language code is only stored with each chunk for filtering and
display. It costs a few regex passes over at most :data:`SAMPLE_CHARS` characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "CYRILLIC",
    "HAN",
    "HANGUL",
    "KANA",
    "LATIN",
    "SAMPLE_CHARS",
    "detect_language",
    "query_language",
    "span_languages",
]

# Character-class bodies (for use inside ``[...]``), shared with the tokenizer.
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# Kana without the punctuation that lives in the same blocks (゠ ・).
KANA = "\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff\uff66-\uff9f"
HANGUL = "\u1100-\u11ff\u3131-\u318e\uac00-\ud7a3"
# Cyrillic letters, leaving out the numeric sign and combining marks (U+0482-U+0489).
CYRILLIC = "\u0400-\u0481\u048a-\u052f"
# Basic Latin and Latin-1/Extended letters, leaving out × and ÷.
LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"

SAMPLE_CHARS = 2000
"""Only this many leading characters are looked at."""

_CLASSES = {"han": HAN, "kana": KANA, "hangul": HANGUL, "cyrillic": CYRILLIC, "latin": LATIN}
_SCRIPTS = {script: re.compile(f"[{letters}]+") for script, letters in _CLASSES.items()}

# One letter of a script, and the language a text written in that script alone has.
_LETTER = {script: re.compile(f"[{letters}]") for script, letters in _CLASSES.items()}
_NOT_LATIN = re.compile(f"[{HAN}{KANA}{HANGUL}{CYRILLIC}]")
_ONLY_SCRIPT_LANGUAGE = {"han": "zh", "kana": "ja", "hangul": "ko", "cyrillic": "ru", "latin": "en"}

# A few kana inside Chinese text (a quoted brand name, a stray の) do not make it
# Japanese; real Japanese prose is roughly half kana.
_MIN_KANA_SHARE = 0.1


def _count(script: str, sample: str) -> int:
    return sum(len(run) for run in _SCRIPTS[script].findall(sample))


def detect_language(text: str) -> str:
    """Return the language code of the dominant script of ``text``.

    Han → ``zh`` (``ja`` when kana are at least a tenth of the Han and kana
    characters), Hangul → ``ko``, Cyrillic → ``ru``, Latin → ``en``; ``und``
    when there are no letters of these scripts. Each letter counts once, and on
    a tie the first script in that order wins.

    Args:
        text: any text; only its first :data:`SAMPLE_CHARS` characters are read.

    Returns:
        One of ``zh``, ``ja``, ``ko``, ``ru``, ``en``, ``und``.
    """
    sample = text[:SAMPLE_CHARS]
    counts = {script: _count(script, sample) for script in _SCRIPTS}
    cjk = counts["han"] + counts["kana"]
    ranked = [
        (cjk, "ja" if counts["kana"] >= _MIN_KANA_SHARE * cjk else "zh"),
        (counts["hangul"], "ko"),
        (counts["cyrillic"], "ru"),
        (counts["latin"], "en"),
    ]
    best_count, best_language = max(ranked, key=lambda item: item[0])
    return best_language if best_count else "und"


# A Russian or Chinese question names commands, options and identifiers in Latin ("квоты
# usrquota", "如何配置 nginx"); an English one seldom holds a Cyrillic or Han word. So beside
# words of another script a Latin word counts half, and a token that reads as code (digits,
# "_", "/", ".", a leading dash: "-la", "/etc/fstab", "my_var") not at all.
_LATIN_WORD_SHARE = 0.5
_CODE = re.compile(r"[\d_/\\.:=$@<>|]|^-")
_EDGE_PUNCTUATION = ".,;:!?()[]{}\"'«»“”‘’「」（），。？！：；"
_NATIVE_UNITS = {
    "zh": ("han", "kana"),
    "ja": ("han", "kana"),
    "ko": ("hangul",),
    "ru": ("cyrillic",),
}


def query_language(text: str) -> str:
    """The language of a question: :func:`detect_language` of its words, where Latin names
    inside a question in another script do not outvote it.

    A question written in one script gets what :func:`detect_language` says. Beside letters
    of another script, that script's language wins unless the Latin words are more than
    twice as many: a Han character counts one, a Cyrillic or Hangul word one, a Latin word
    half, a code-like token (``-la``, ``/etc/fstab``, ``my_var``, ``v2``) nothing.
    """
    sample = text[:SAMPLE_CHARS]
    if _NOT_LATIN.search(sample) is None:
        return detect_language(sample)
    words = [word.strip(_EDGE_PUNCTUATION) for word in sample.split()]
    latin = sum(len(_SCRIPTS["latin"].findall(w)) for w in words if w and not _CODE.search(w))
    native = detect_language(_SCRIPTS["latin"].sub(" ", sample))
    units = _NATIVE_UNITS.get(native, ())
    # Han and kana are counted by character (no spaces between words), the rest by word.
    weight = sum(
        _count(script, sample)
        if script in ("han", "kana")
        else len(_SCRIPTS[script].findall(sample))
        for script in units
    )
    return native if weight >= _LATIN_WORD_SHARE * latin else "en"


def span_languages(text: str, spans: Sequence[tuple[int, int]], start: int, end: int) -> list[str]:
    """:func:`detect_language` of each ``text[a:b]`` of ``spans``, which lie in ``text[start:end]``.

    When that region is written in one script (most documents and sections), a span's
    language is that script's if its sample holds one letter of it, else ``und``: the same
    answer, without counting each span's letters; a region mixing scripts is detected span
    by span.
    """
    scripts = _scripts_in(text, start, end)
    if len(scripts) > 1:
        return [detect_language(text[a:b]) for a, b in spans]
    if not scripts:
        return ["und"] * len(spans)
    letter, language = _LETTER[scripts[0]], _ONLY_SCRIPT_LANGUAGE[scripts[0]]
    return [
        language if letter.search(text, a, min(b, a + SAMPLE_CHARS)) else "und" for a, b in spans
    ]


def _scripts_in(text: str, start: int, end: int) -> list[str]:
    """The scripts with letters in ``text[start:end]``."""
    if _NOT_LATIN.search(text, start, end) is None:  # most text: one pass instead of four
        return ["latin"] if _LETTER["latin"].search(text, start, end) else []
    return [script for script, letter in _LETTER.items() if letter.search(text, start, end)]
