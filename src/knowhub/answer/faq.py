"""The FAQ fast path: a question that repeats a stored one gets the stored answer."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from knowhub.lang import query_tokens
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import FaqEntry

__all__ = ["FaqMatch", "match_faq"]

_NOISE = re.compile(r"[\W_]+", re.UNICODE)


@dataclass(frozen=True)
class FaqMatch:
    entry: FaqEntry
    similarity: float
    by: str  # exact | words | meaning

    def to_dict(self) -> dict[str, object]:
        return {
            "question": self.entry.question,
            "source": self.entry.source,
            "line": self.entry.line,
            "similarity": round(self.similarity, 3),
            "by": self.by,
        }


def match_faq(
    question: str,
    entries: Sequence[FaqEntry],
    vector: Vectors | None,
    word_threshold: float,
    meaning_threshold: float,
) -> FaqMatch | None:
    """The stored question ``question`` repeats, if any; the best one when several do.

    Equal after normalisation (case, width, punctuation) is ``exact``; otherwise the
    stemmed-term overlap (Dice) must reach ``word_threshold`` or, with ``vector``, the
    cosine similarity of the two questions must reach ``meaning_threshold``.
    """
    if not entries:
        return None
    key = _normalised(question)
    terms = set(query_tokens(question, joined=False))
    best: FaqMatch | None = None
    for entry in entries:
        if _normalised(entry.question) == key:
            return FaqMatch(entry, 1.0, "exact")
        other = set(query_tokens(entry.question, joined=False))
        words = 2 * len(terms & other) / (len(terms) + len(other)) if terms and other else 0.0
        meaning = float(np.dot(vector, entry.vector)) if vector is not None else 0.0
        for score, by, threshold in (
            (words, "words", word_threshold),
            (meaning, "meaning", meaning_threshold),
        ):
            if score >= threshold and (best is None or score > best.similarity):
                best = FaqMatch(entry, score, by)
    return best


def _normalised(text: str) -> str:
    return _NOISE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
