"""Turn text into the terms the lexical index stores and queries look up.

SQLite FTS5's own tokenizer cannot segment Chinese (nDCG 0.11 against 0.96 with
jieba, measured when the index was chosen), so the index holds text we tokenize here, one *script
run* at a time; mixed-language text therefore needs no language detector:

* Han runs are segmented by jieba (loaded once, on the first Chinese text or by
  :func:`load_tokenizers`); a query also looks up the dictionary words inside its longer
  words, as jieba's search mode does (a question's "相对路径" finds a text's "相对");
* Latin words are stemmed with Porter (Porter 1980, via Snowball), Cyrillic
  words with Snowball Russian (``ё`` folded to ``е`` first);
* kana and Hangul runs become overlapping character bigrams, the usual
  dictionary-free fallback for Japanese and Korean;
* numbers are kept, other alphabets are only lower-cased;
* a key chord, a word of parts joined by ``_`` or ``-`` and an amount with its unit are
  also one term each, after the text's others (``Ctrl+A``: ``ctrla``;
  ``tcp_keepalive_time``: ``tcpkeepalivetime``; ``30 GiB``: ``30gib``, as ``30GiB`` is).

Text is NFKC-normalised first so full-width Latin, digits and half-width kana
match their ordinary forms. English, Russian and Chinese stopwords are dropped
(checked on the lower-cased word, before stemming). Every term consists of
letters and digits only, so it never carries whitespace or FTS5 syntax.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING

from knowhub.lang.detect import CYRILLIC, HAN, HANGUL, KANA, LATIN
from knowhub.lang.stopwords import STOPWORDS_EN, STOPWORDS_RU, STOPWORDS_ZH

if TYPE_CHECKING:
    import jieba

__all__ = ["count_tokens", "index_tokens", "load_tokenizers", "query_tokens"]

# One alternative per script; digits stick to a following or preceding letter
# ("p53", "1990s") the way FTS5's unicode61 keeps them, bare numbers stand alone. No two
# alternatives match at the same place (``number`` only after both scripts with digits),
# so their order only decides speed: the commonest first. The lookahead, a class holding
# every character a term can start with, fails at spaces and punctuation at once instead
# of trying each alternative there (matching scifact: 0.64 s without it, 0.41 s with).
_TERM_RE = re.compile(
    f"(?=[\\w{HAN}{KANA}{HANGUL}{CYRILLIC}{LATIN}])"
    f"(?:(?P<latin>[0-9]*[{LATIN}][0-9{LATIN}]*)"
    f"|(?P<han>[{HAN}]+)"
    f"|(?P<cyrillic>[0-9]*[{CYRILLIC}][0-9{CYRILLIC}]*)"
    f"|(?P<kana>[{KANA}]+)"
    f"|(?P<hangul>[{HANGUL}]+)"
    r"|(?P<number>\d+)"
    f"|(?P<other>[^\\W\\d_{HAN}{KANA}{HANGUL}{CYRILLIC}{LATIN}]+))"
)
_HAN_WORD = re.compile(f"[{HAN}]+")

# Two kinds of name are also one term each, their parts joined, beside the parts' own terms:
# a key chord ("Ctrl+A", "Alt-F4", "Ctrl + Shift + T": "ctrla"), whose key alone is often a
# letter or a stopword no index keeps, so a question about Ctrl+A matched every passage
# saying "Ctrl"; and a word of Latin letters and digits in parts joined by "_" or "-"
# ("tcp_keepalive_time", "--no-splash", "IL-6": "tcpkeepalivetime", "nosplash", "il6"),
# whose parts alone matched PostgreSQL's "tcp_keepalives_idle" as well as the kernel's
# setting asked about (scifact nDCG@10 0.7146 → 0.7232). Both end where a word ends, and a
# joined term needs a letter: "1-2" is a range, not the number 12. Possessive, and a joined
# word starts only where no "-" or word precedes it, so no input makes the match quadratic.
# Term shares leave them out (``query_tokens(joined=False)``).
_JOINED_RE = re.compile(
    r"(?<!\w)(?:(?:ctrl|alt|shift|cmd|meta|super)(?:[ \t]*+\+[ \t]*+|-)){1,3}+[a-z0-9]++(?![\w-])"
    r"|(?<![\w-])-*+[a-z0-9]++(?:[_-][a-z0-9]++)++(?![\w-])"
)
_JOINERS = re.compile(r"[ \t+_-]+")

# An amount written apart from its unit ("30 GiB", "512 МБ", "100 ms") is one term too, the
# term "30GiB" gets: a question saying "30 GiB" missed the page saying "扩展 home0 到 30GiB".
# Units of two letters or more only ("5 s", "1 с помощью", "top 5 us" would join words),
# after a whole number that is not part of a word, a decimal, a time or a group of thousands
# ("x3 11 ms", "1.5 GB", "10:30 ms", "1 024 МБ"); Chinese runs into it ("系统：30 GiB").
_UNITS = "[kmgtp]i?b|[kmg]?hz|[mn]s|sec|min|[kmg]bps|px|dpi|[кмгт]б|[кмгт]байт|мс|мин|сек"
_AMOUNT_RE = re.compile(
    rf"(?<![^\W{HAN}{KANA}{HANGUL}]|[.,/-])(?<![0-9]:)(?<![0-9][ \t])"
    rf"([0-9]++)[ \t]({_UNITS})(?![\w-])"
)
# count_tokens: one per CJK character, one per run of other letters and digits.
_COUNT_RE = re.compile(f"[{HAN}{KANA}{HANGUL}]|[^\\W_{HAN}{KANA}{HANGUL}]+")

# Words seen in a corpus follow Zipf's law, so a bounded cache answers most stemming
# calls. Bounded by count and, since only words of up to _CACHED_WORD_CHARS are kept
# (longer ones are rare and stemmed each time), by bytes: under 10 MB per language even
# when hostile queries fill it with unique words.
_STEM_CACHE_SIZE = 1 << 15
_CACHED_WORD_CHARS = 32

# Ingest tokenizes each chunk for the lexical index just before embedding it, and the
# hashing embedder tokenizes the same text again: the terms of recent texts are kept so
# that it is done once (tokenizing was half of ingest's CPU with that embedder). Enough for
# the chunks of one document of up to a thousand; texts longer than a chunk are not kept,
# so the texts held stay a few MB (under 40 MB even of 4-byte characters).
_RECENT_TEXTS = 1024
_CACHED_TEXT_CHARS = 4096

# Snowball stemmers keep the word being stemmed on the instance, so concurrent callers
# take turns; the lock also makes each stemmer load once.
_STEM_LOCK = threading.Lock()

# jieba's dictionary costs ~1 s and ~40 MB to load; without the lock every thread that
# met Chinese text first loaded its own copy at once (20 threads: 23 s and 700 MB).
_SEGMENTER_LOCK = threading.Lock()
_segmenter_instance: jieba.Tokenizer | None = None


@functools.cache
def _stemmer(algorithm: str) -> Callable[[str], str]:
    import snowballstemmer  # imports ~40 language modules: only when first needed

    stem: Callable[[str], str] = snowballstemmer.stemmer(algorithm).stemWord
    return stem


def _stem(algorithm: str, word: str) -> str:
    with _STEM_LOCK:
        return _stemmer(algorithm)(word)


def _latin_stem(word: str) -> str | None:
    return None if word in STOPWORDS_EN else _stem("porter", word)


def _cyrillic_stem(word: str) -> str | None:
    word = word.replace("ё", "е")
    return None if word in STOPWORDS_RU else _stem("russian", word)


_latin_cached = functools.lru_cache(maxsize=_STEM_CACHE_SIZE)(_latin_stem)
_cyrillic_cached = functools.lru_cache(maxsize=_STEM_CACHE_SIZE)(_cyrillic_stem)


def _cyrillic_term(word: str) -> str | None:
    return _cyrillic_cached(word) if len(word) <= _CACHED_WORD_CHARS else _cyrillic_stem(word)


def _segmenter() -> jieba.Tokenizer:
    global _segmenter_instance
    found = _segmenter_instance
    if found is not None:
        return found
    with _SEGMENTER_LOCK:
        if _segmenter_instance is None:
            import jieba

            # jieba logs its dictionary loading to stderr (its logger starts at DEBUG).
            jieba.setLogLevel(logging.WARNING)
            segmenter = jieba.Tokenizer()
            segmenter.initialize()
            _segmenter_instance = segmenter
        return _segmenter_instance


def load_tokenizers() -> None:
    """Load jieba's dictionary and the Snowball stemmers now, once.

    Servers call this during warm-up, so that no request pays for the loading; any
    thread may call it (or simply tokenize) concurrently: each loads exactly once.
    """
    _segmenter()
    for algorithm in ("porter", "russian"):
        _stem(algorithm, "warm")


def _han_terms(run: str) -> list[str]:
    return [word for word in _segmenter().lcut(run) if word not in STOPWORDS_ZH and word.isalnum()]


def _han_parts(words: list[str]) -> list[str]:
    """The dictionary words inside each Han word of three characters or more, as jieba's
    search mode finds them: "相对路径" holds "相对" and "路径"."""
    long_words = [word for word in words if len(word) >= 3 and _HAN_WORD.fullmatch(word)]
    if not long_words:  # jieba's dictionary is loaded for Chinese text only
        return []
    segmenter = _segmenter()
    return [
        part
        for word in long_words
        for part in segmenter.cut_for_search(word)
        if part != word and part not in STOPWORDS_ZH
    ]


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def _terms(text: str) -> tuple[list[str], list[str]]:
    """All terms of ``text`` in text order, stopwords removed; then, apart, the terms of its
    key chords and joined words."""
    terms: list[str] = []
    normalized = unicodedata.normalize("NFKC", text).lower()
    # findall's tuples (one slot per alternative, the matching one non-empty) cost less
    # than match objects; Latin words, most of them, take no call of our own.
    for latin, han, cyrillic, kana, hangul, number, other in _TERM_RE.findall(normalized):
        if latin:
            term = _latin_cached(latin) if len(latin) <= _CACHED_WORD_CHARS else _latin_stem(latin)
            if term:
                terms.append(term)
        elif han:
            terms.extend(_han_terms(han))
        elif cyrillic:
            term = _cyrillic_term(cyrillic)
            if term:
                terms.append(term)
        elif kana or hangul:
            terms.extend(_bigrams(kana or hangul))
        else:
            terms.append(number or other)
    return terms, _joined_words(normalized)


def _joined_words(normalized: str) -> list[str]:
    """The terms of the key chords, joined words and amounts with their units of
    NFKC-normalised, lower-cased text."""
    terms: list[str] = []
    if "+" in normalized or "-" in normalized or "_" in normalized:
        whole = (_JOINERS.sub("", m.group()) for m in _JOINED_RE.finditer(normalized))
        terms.extend(term for term in whole if not term.isdigit())
    for number, unit in _AMOUNT_RE.findall(normalized):
        # As the amount written together is: "100ms" is stemmed to "100m".
        term = _latin_cached(number + unit) if unit.isascii() else _cyrillic_term(number + unit)
        if term:
            terms.append(term)
    return terms


@functools.lru_cache(maxsize=_RECENT_TEXTS)
def _recent_terms(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    words, joined = _terms(text)
    return tuple(words), tuple(joined)


def index_tokens(text: str, *, joined: bool = True) -> list[str]:
    """Terms to store in the full-text index for one chunk.

    The terms of recently tokenized texts are remembered, so tokenizing a chunk again
    (the hashing embedder does) costs a lookup.

    Args:
        text: the chunk's text, in any mix of languages.
        joined: with the terms of its key chords and joined words (see
            :func:`query_tokens`).

    Returns:
        The normalised terms in text order, repeats kept (they are term
        frequencies), stopwords removed.
    """
    words, whole = _terms(text) if len(text) > _CACHED_TEXT_CHARS else _recent_terms(text)
    return [*words, *whole] if joined else list(words)


def query_tokens(text: str, *, joined: bool = True) -> list[str]:
    """Terms to look up for a query, normalised exactly as :func:`index_tokens`.

    Args:
        text: the user's query.
        joined: with the terms of its key chords and joined words (``ctrla``,
            ``tcpkeepalivetime``), which find a name as written, and the words inside its
            Chinese words of three characters or more ("相对路径": "相对", "路径"), which
            find a text that writes the word apart. Whatever weighs a text by
            the share of the query's terms it holds leaves them out (``joined=False``): a
            compound would count twice, and "e-mail" as "email" lifted a warranty page's
            "by e-mail" over the answer floor for a question on a phishing e-mail.

    Returns:
        The distinct terms in first-seen order, stopwords removed; empty when the
        query holds nothing but stopwords and punctuation.
    """
    words, whole = _terms(text)
    return list(dict.fromkeys([*words, *whole, *_han_parts(words)] if joined else words))


def count_tokens(text: str) -> int:
    """Cheaply count tokens, for chunk sizes measured in tokens.

    Each run of Latin, Cyrillic or other letters and digits counts 1, each Han,
    kana or Hangul character counts 1, punctuation and whitespace count 0. No
    model vocabulary is involved, so this only approximates what an embedder
    sees, but it is stable, fast and monotone (a longer text never counts less).

    Args:
        text: any text.

    Returns:
        The number of tokens.
    """
    return len(_COUNT_RE.findall(text))
