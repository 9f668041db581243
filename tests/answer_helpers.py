"""A verified answer built without a collection, for the tests of what shows or records it."""

from __future__ import annotations

from knowhub.answer.events import Answer
from knowhub.answer.verify import verify_answer
from knowhub.config import VerificationSettings
from knowhub.models import Hit
from knowhub.testing.hits import hit


def source(text: str, relevance: float = 0.8) -> Hit:
    """Source [1] of an answer: ``plans.md`` holding ``text``."""
    return hit(text, source="plans.md", title="Plans", doc_hash="h", relevance=relevance)


def verified(text: str, hit: Hit, model: str = "m") -> Answer:
    """A rag answer of ``text`` citing ``hit``, verified as the pipeline verifies it."""
    answer = Answer("How much?", "How much?", text, "rag", [hit], hit.relevance or 0.0, 0.0)
    answer.model = model
    answer.verification = verify_answer(text, [hit], VerificationSettings())
    answer.confidence = answer.evidence * answer.verification.score
    answer.reasons = answer.verification.reasons()
    return answer
