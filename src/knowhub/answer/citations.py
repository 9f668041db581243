"""Does each cited ``[n]`` exist and support the sentence it is attached to?"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from knowhub.answer.text import coverage
from knowhub.lang.sentences import sentences
from knowhub.models import Hit

__all__ = ["MARK", "CitationReport", "check_citations", "claims"]

MARK = re.compile(r"\[(\d{1,3})\]")
_LEADING_MARKS = re.compile(r"^(?:\s*\[\d{1,3}\])+[\s.。]*")


@dataclass
class CitationReport:
    """Per answer: which citations hold.

    Attributes:
        cited: source numbers cited at least once, in first-cited order.
        invalid: cited numbers with no such source.
        unsupported: (sentence, n) pairs whose source shares too few of its terms.
        claims: sentences that cite something; ``supported`` of them are backed.
        uncited: sentences with no citation at all.
    """

    cited: list[int] = field(default_factory=list)
    invalid: list[int] = field(default_factory=list)
    unsupported: list[tuple[str, int]] = field(default_factory=list)
    claims: int = 0
    supported: int = 0
    uncited: int = 0

    @property
    def score(self) -> float:
        """Share of sentences that carry a valid, supporting citation (0 when none)."""
        total = self.claims + self.uncited
        return self.supported / total if total else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "cited": self.cited,
            "invalid": self.invalid,
            "unsupported": [{"sentence": s[:200], "source": n} for s, n in self.unsupported],
            "claims": self.claims,
            "supported": self.supported,
            "uncited": self.uncited,
            "score": round(self.score, 3),
        }


def check_citations(answer: str, sources: Sequence[Hit], threshold: float) -> CitationReport:
    """Check every sentence of ``answer`` against the sources it cites.

    A sentence is supported when at least one of its valid citations contains
    ``threshold`` or more of the sentence's terms.
    """
    report = CitationReport()
    for sentence in claims(answer):
        numbers = [int(m) for m in MARK.findall(sentence)]
        claim = MARK.sub("", sentence).strip()
        if not numbers:
            if len(claim) > 1:
                report.uncited += 1
            continue
        report.claims += 1
        backed = False
        for n in dict.fromkeys(numbers):
            if n not in report.cited:
                report.cited.append(n)
            if not 1 <= n <= len(sources):
                if n not in report.invalid:
                    report.invalid.append(n)
                continue
            if coverage(claim, sources[n - 1].text) >= threshold:
                backed = True
            else:
                report.unsupported.append((claim, n))
        report.supported += backed
    return report


def claims(answer: str) -> list[str]:
    """Sentences, with citations written after the full stop ("… hours. [1] Next …") moved
    back onto the sentence they follow."""
    out: list[str] = []
    for sentence in sentences(answer):
        lead = _LEADING_MARKS.match(sentence)
        if out and lead:
            out[-1] += " " + lead.group().strip()
            sentence = sentence[lead.end() :].strip()
        if sentence:
            out.append(sentence)
    return out
