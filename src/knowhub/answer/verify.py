"""Generation verification: is each sentence of an answer backed by the sources it cites?

Each sentence's support is measured against the text of its valid ``[n]`` citations (an
uncited sentence: against every source, and it is at best ``partial``):

- **lexical**: the share of the sentence's terms (stemmed, stopwords out; the project's
  tokenizer, :mod:`knowhub.lang`) that the cited text holds;
- **semantic**: the sentence's cosine with the cited source (the best one when it cites
  several), placed on the embedder's calibrated range for the language — the same scale
  search relevance uses (:mod:`knowhub.query.relevance`).

Support is their mean (words alone for an embedder without calibration, such as
``hashing``), compared with ``answer.verification``'s thresholds. A number the sentence
states that no cited source contains makes it unsupported whatever its support: a wrong
figure changes one term in ten and nothing in the embedding. A sentence saying the documents
do not cover something states no fact and is not judged. The thresholds were measured on
hand-labelled pairs (``benchmarks/verification_thresholds.py``, docs/ask.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from knowhub.answer.answers import AnswerMatch
from knowhub.answer.citations import MARK, claims
from knowhub.answer.text import coverage
from knowhub.config import VerificationSettings
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder

__all__ = ["SentenceCheck", "Verification", "verify_answer"]

_SPACE_BEFORE_STOP = re.compile(r"\s+([.,;:!?。，；：！？])")  # left where a mark was cut out
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# "The documents do not say …" / "文档中没有…" / "В документах нет …": an abstention, no claim.
_ABSTAINS = re.compile(
    r"\b(documents?|sources?)\b.{0,40}\b(do|does|did)\s+not\b|\bno (source|document)s?\b"
    r"|(文档|资料|来源)[^。]{0,12}(没有|未|并未)"
    r"|(документ|источник)\w*[^.]{0,40}\b(нет|не (указ|сказ|говор|привод|содерж|упомина))",
    re.IGNORECASE,
)
_SCORE = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
# An answer not shown to answer the question counts half: what it says is in the sources,
# but whether it is what was asked is not known.
NOT_SHOWN_TO_ANSWER = 0.5
_STATUS_REASON = {"partial": "partially_supported_sentence", "unsupported": "unsupported_sentence"}
_ISSUE_REASON = {"uncited": "uncited_sentence"}


@dataclass
class SentenceCheck:
    """One sentence of the answer and how well its citations back it.

    ``status``: supported | partial | unsupported | no_claim (says the documents lack
    something). ``issue``: why it is not fully supported beyond its support score —
    ``uncited``, ``number_not_in_source`` or ``invalid_citation`` (None: none).
    """

    text: str
    citations: list[int]
    status: str = "unsupported"
    support: float = 0.0
    lexical: float = 0.0
    semantic: float | None = None
    issue: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": self.citations,
            "status": self.status,
            "support": round(self.support, 3),
            "lexical": round(self.lexical, 3),
            "semantic": None if self.semantic is None else round(self.semantic, 3),
            "issue": self.issue,
        }


@dataclass
class Verification:
    """The verdict on a whole answer: ``status`` is ``verified`` (every sentence supported,
    and the answer not shown not to answer), ``quoted`` (every sentence supported, but the
    answer was measured and not shown to answer the question: an extractive answer),
    ``unsupported`` (no sentence is supported) or ``partially_supported``; ``score`` is the
    mean of its sentences (supported 1, partial 0.5, unsupported 0; 1 when it states no
    fact), halved when the answer is not shown to answer."""

    sentences: list[SentenceCheck] = field(default_factory=list)
    method: str = "lexical"  # lexical | lexical+embedding, then +llm when the LLM judged
    note: str | None = None  # why the LLM verifier's verdict is missing
    answers: AnswerMatch | None = None  # whether it answers the question (None: not measured)

    @property
    def not_shown_to_answer(self) -> bool:
        return self.answers is not None and not self.answers.answers

    @property
    def judged(self) -> list[SentenceCheck]:
        return [s for s in self.sentences if s.status != "no_claim"]

    @property
    def score(self) -> float:
        judged = self.judged
        score = sum(_SCORE[s.status] for s in judged) / len(judged) if judged else 1.0
        return score * NOT_SHOWN_TO_ANSWER if self.not_shown_to_answer else score

    @property
    def status(self) -> str:
        statuses = {s.status for s in self.judged}
        if statuses <= {"supported"}:
            return "quoted" if self.not_shown_to_answer else "verified"
        return "partially_supported" if "supported" in statuses else "unsupported"

    @property
    def flagged(self) -> list[SentenceCheck]:
        """The sentences a reader must not take on trust: partial or unsupported."""
        return [s for s in self.judged if s.status != "supported"]

    def reasons(self) -> list[str]:
        """What lowered the score: ``uncited_sentence``, ``number_not_in_source``,
        ``invalid_citation``, ``unsupported_sentence``, ``partially_supported_sentence``,
        ``not_shown_to_answer``."""
        found: list[str] = []
        for check in self.judged:
            if check.issue is not None:
                found.append(_ISSUE_REASON.get(check.issue, check.issue))
            if check.status != "supported":
                found.append(_STATUS_REASON[check.status])
        found += ["llm_verifier_failed"] if self.note else []
        found += ["not_shown_to_answer"] if self.not_shown_to_answer else []
        return list(dict.fromkeys(found))

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "score": round(self.score, 3),
            "method": self.method,
            "sentences": [s.to_dict() for s in self.sentences],
            "flagged": [s.text for s in self.flagged],
            "note": self.note,
            "answers": self.answers.to_dict() if self.answers is not None else None,
        }


def verify_answer(
    text: str,
    sources: Sequence[Hit],
    options: VerificationSettings,
    embedder: Embedder | None = None,
    language: str = "en",
) -> Verification:
    """Check every sentence of ``text`` against the ``sources`` it cites (numbered from 1).

    ``embedder`` adds the semantic half when it has a calibration for ``language``; its
    sentences are encoded in one batch, the sources in another.
    """
    checks = [_sentence(s, len(sources)) for s in claims(text)]
    checks = [c for c in checks if c.text]
    calibration = embedder.calibration(language) if embedder is not None else None
    cosines = _cosines(checks, sources, embedder) if calibration is not None else None
    for row, check in enumerate(checks):
        if check.status == "no_claim":
            continue
        cited = _cited(check, sources)
        check.lexical = coverage(check.text, "\n".join(h.text for h in cited))
        if cosines is not None and calibration is not None:
            best = max(float(cosines[row, n]) for n in _indexes(check, sources))
            low, high = calibration
            check.semantic = min(1.0, max(0.0, (best - low) / (high - low)))
        _judge(check, cited, options)
    method = "lexical+embedding" if cosines is not None else "lexical"
    return Verification(checks, method)


def _sentence(sentence: str, count: int) -> SentenceCheck:
    numbers = list(dict.fromkeys(int(m) for m in MARK.findall(sentence)))
    claim = _SPACE_BEFORE_STOP.sub(r"\1", " ".join(MARK.sub("", sentence).split()))
    check = SentenceCheck(claim, numbers)
    if len(claim) <= 1:
        check.text = ""  # a stray mark or bullet: nothing said
    elif claim.endswith((":", "：")) or _ABSTAINS.search(claim):
        check.status = "no_claim"  # introduces a list, or says what the documents lack
    elif any(not 1 <= n <= count for n in numbers):
        check.issue = "invalid_citation"
    elif not numbers:
        check.issue = "uncited"
    return check


def _indexes(check: SentenceCheck, sources: Sequence[Hit]) -> list[int]:
    """0-based indexes of the sources ``check`` is measured against (all when it cites none
    that exists)."""
    valid = [n - 1 for n in check.citations if 1 <= n <= len(sources)]
    return valid or list(range(len(sources)))


def _cited(check: SentenceCheck, sources: Sequence[Hit]) -> list[Hit]:
    return [sources[i] for i in _indexes(check, sources)]


def _cosines(
    checks: Sequence[SentenceCheck], sources: Sequence[Hit], embedder: Embedder | None
) -> np.ndarray[Any, np.dtype[np.float32]] | None:
    """Sentence × source cosine matrix (sentences encoded as queries, sources as passages)."""
    if embedder is None or not checks or not sources:
        return None
    sentence_vectors = embedder.embed_queries([c.text for c in checks])
    source_vectors = embedder.embed_documents([h.text for h in sources])
    matrix: np.ndarray[Any, np.dtype[np.float32]] = sentence_vectors @ source_vectors.T
    return matrix


def _judge(check: SentenceCheck, cited: Sequence[Hit], options: VerificationSettings) -> None:
    """Set ``check.support`` and ``check.status`` from its measurements."""
    if check.semantic is None:
        check.support = check.lexical
        high, low = options.lexical_supported_at, options.lexical_partial_at
    else:
        check.support = (check.lexical + check.semantic) / 2
        high, low = options.supported_at, options.partial_at
    status = "supported" if check.support >= high else "partial"
    status = status if check.support >= low else "unsupported"
    if check.issue is None and _missing_number(check.text, cited):
        check.issue = "number_not_in_source"
    if check.issue == "number_not_in_source":
        status = "unsupported"
    elif check.issue is not None and status == "supported":
        status = "partial"  # true somewhere in the sources, but not where it says
    check.status = status


def _missing_number(sentence: str, cited: Sequence[Hit]) -> bool:
    """Whether ``sentence`` states a number none of ``cited`` contains (1,000 = 1000)."""
    have = {_plain(n) for hit in cited for n in _NUMBER.findall(hit.text)}
    return any(_plain(n) not in have for n in _NUMBER.findall(sentence))


def _plain(number: str) -> str:
    if re.fullmatch(r"\d{1,3}(,\d{3})+", number):
        return number.replace(",", "")
    return number
