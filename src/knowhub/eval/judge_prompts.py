"""The LLM judge's prompts (after Ragas's own, Es et al. 2023), each answered in JSON.

``VERSION`` is part of every cache key: change it with any prompt, so no cached verdict of
an older prompt is reused.
"""

from __future__ import annotations

__all__ = ["CONTEXT_USEFUL", "QUESTIONS", "STATEMENTS", "VERDICTS", "VERSION"]

VERSION = "1"

STATEMENTS = (
    "Given a question and an answer, break the answer into standalone statements, each one "
    "fully understandable without pronouns, and each one claim. Ignore citation marks like "
    '[1]. Reply with JSON only: {"statements": ["...", "..."]}.'
)

VERDICTS = (
    "Judge the faithfulness of statements to a context. For each statement, answer 1 if it "
    "can be directly inferred from the context, 0 if it cannot. Reply with JSON only, one "
    'verdict per statement in order: {"verdicts": [{"statement": "...", "reason": "...", '
    '"verdict": 1}]}.'
)

QUESTIONS = (
    "Generate a question that the given answer answers, in the answer's language, and say "
    "whether the answer is noncommittal (1: evasive, vague or saying it does not know, such "
    'as "I don\'t know" or "the documents do not say"; 0: it commits to an answer). Reply '
    'with JSON only: {"questions": ["...", "...", "..."], "noncommittal": 0}, three '
    "different questions."
)

CONTEXT_USEFUL = (
    "Given a question, an answer and a numbered list of contexts, say for each context whether "
    "it was useful in arriving at the answer (1) or not (0). Reply with JSON only, one verdict "
    'per context in order: {"verdicts": [1, 0]}.'
)
