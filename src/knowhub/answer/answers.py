"""Does an answer answer the question? Being quoted from the sources is not enough.

An extractive answer is quoted word for word, so every sentence of it is "supported" by
what it cites, whether or not it says what was asked. Its **match** with the question is the
mean of

- **terms**: the share of the question's terms (stemmed, stopwords out) its sentences hold;
- **meaning**: its closest sentence's cosine with the question on the embedder's calibrated
  scale (:mod:`knowhub.answer.meaning`),

or the terms alone for an embedder without a calibration (``hashing``). It is shown to answer
when the match reaches ``answer.verification.answers_at`` (``lexical_answers_at`` on words
alone), the way verification's support is the mean of words and meaning.

The thresholds were chosen on hand-labelled question/answer pairs
(``benchmarks/answer_match_thresholds.py``, docs/ask.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from knowhub.answer.citations import MARK, claims
from knowhub.answer.meaning import closeness
from knowhub.answer.text import coverage
from knowhub.config import VerificationSettings
from knowhub.providers.embedders.cached import CachedVectors

__all__ = ["AnswerMatch", "answer_match"]


@dataclass(frozen=True)
class AnswerMatch:
    """How well an answer matches its question: ``terms`` (share of the question's terms
    it holds), ``meaning`` (its closest sentence, 0–1; None: not measured), ``match``
    (their mean, or the terms alone) and whether that is enough (``answers``)."""

    terms: float
    meaning: float | None
    match: float
    answers: bool

    def to_dict(self) -> dict[str, Any]:
        meaning = None if self.meaning is None else round(self.meaning, 3)
        return {
            "terms": round(self.terms, 3),
            "meaning": meaning,
            "match": round(self.match, 3),
            "answers": self.answers,
        }


def answer_match(
    question: str,
    text: str,
    options: VerificationSettings,
    vectors: CachedVectors | None = None,
    language: str = "en",
) -> AnswerMatch:
    """Measure whether ``text`` (its ``[n]`` marks aside) answers ``question``."""
    said = [" ".join(MARK.sub("", s).split()) for s in claims(text)]
    said = [s for s in said if s]
    terms = coverage(question, "\n".join(said))
    near = closeness(vectors, language, question, said)
    if not near:
        return AnswerMatch(terms, None, terms, terms >= options.lexical_answers_at)
    match = (terms + max(near)) / 2
    return AnswerMatch(terms, max(near), match, match >= options.answers_at)
