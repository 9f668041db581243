"""Answer checks: verifying what a generated answer says, and prompts by question category."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from knowhub.config.base import Section

__all__ = ["CATEGORIES", "DEFAULT_PROFILES", "ProfileSettings", "VerificationSettings"]

CATEGORIES = ("pricing", "compliance", "troubleshooting", "how-to", "general")
"""The question categories the classifier assigns (knowhub.answer.category)."""

_RULES = (
    "You answer questions about the user's documents using only the numbered sources below. "
    "After each sentence, cite the sources that support it by number in square brackets, "
    "like [1] or [2][3]. If the sources do not contain the answer, say that the documents do "
    "not cover it; never guess or use outside knowledge. Answer in the language of the "
    "question, concisely."
)

DEFAULT_PROFILES = {
    "general": _RULES,
    "pricing": _RULES
    + " Quote prices, fees, discounts and every other number only as the sources state "
    "them, with their currency, unit and billing period; never estimate, convert, round or "
    "compute a figure. When a figure the question asks for is not in the sources, say that "
    "the documents do not give it.",
    "compliance": _RULES
    + " State obligations, requirements, deadlines and limits only as the sources word them, "
    "citing the clause; do not generalise them, add exceptions or give advice beyond them. "
    "Quote numbers only from the sources, and when the sources do not settle the question, "
    "say so.",
    "troubleshooting": _RULES
    + " Give the cause the sources name, then the steps they give, in their order, each "
    "with its citation; do not suggest steps the sources do not contain.",
    "how-to": _RULES
    + " Give the steps in the order the sources give them, each with its citation, and "
    "name the settings, commands or menus exactly as the sources write them.",
}
"""The built-in prompt profiles: profile name → system prompt (sources follow it)."""


class VerificationSettings(Section):
    """Checking each sentence of an answer against the sources it cites (docs/ask.md).

    The thresholds were chosen on tests/unit/answer/verification_pairs.json (47 hand-labelled
    sentence/source pairs, en/zh/ru): ``benchmarks/verification_thresholds.py``; those of
    whether an extractive answer answers on answer_pairs.json (35 question/answer pairs):
    ``benchmarks/answer_match_thresholds.py``.
    """

    enabled: bool = Field(True, description="Check every sentence of a RAG answer.")
    supported_at: float = Field(
        0.75,
        ge=0.0,
        le=1.0,
        description="Support (mean of term share and calibrated cosine) a sentence needs to "
        "count as supported by its citations.",
    )
    partial_at: float = Field(
        0.35, ge=0.0, le=1.0, description="Below this support a sentence is unsupported."
    )
    lexical_supported_at: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="As supported_at, when support is judged on words alone (an embedder "
        "without calibration, e.g. hashing).",
    )
    lexical_partial_at: float = Field(
        0.3, ge=0.0, le=1.0, description="As partial_at, on words alone."
    )
    answers_at: float = Field(
        0.7,
        ge=0.0,
        le=1.0,
        description="Match (mean of the share of the question's terms an extractive answer "
        "holds and its closest sentence's calibrated cosine with the question) it needs to "
        "be shown to answer the question; below it the answer is only quoted.",
    )
    lexical_answers_at: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="As answers_at, when judged on words alone (an embedder without "
        "calibration, e.g. hashing).",
    )
    low_evidence: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="A best source less relevant than this adds the reason low_top_score.",
    )
    llm: bool = Field(
        False, description="Also ask the LLM (JSON mode) to judge each sentence: one extra call."
    )

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        for low, high in (
            ("partial_at", "supported_at"),
            ("lexical_partial_at", "lexical_supported_at"),
        ):
            if getattr(self, low) > getattr(self, high):
                raise ValueError(
                    f"answer.verification.{low} ({getattr(self, low)}) must not exceed "
                    f"answer.verification.{high} ({getattr(self, high)})"
                )
        return self


class ProfileSettings(Section):
    """Which system prompt an answer uses, by the question's category (docs/ask.md)."""

    templates: dict[str, str] = Field(
        default_factory=dict,
        description="Prompt profiles: name → system prompt text, added to (or replacing) the "
        "built-in general, pricing, compliance, troubleshooting and how-to.",
    )
    categories: dict[str, str] = Field(
        default_factory=dict,
        description="Question category → profile name; a category not listed uses the "
        "profile of its own name.",
    )
    llm_classifier: bool = Field(
        False,
        description="When the rules find no category, ask the LLM (JSON mode): one extra call.",
    )

    @model_validator(mode="after")
    def _known(self) -> Self:
        for category, profile in self.categories.items():
            if category not in CATEGORIES:
                raise ValueError(
                    f"answer.profiles.categories: unknown category {category!r}; "
                    f"known: {', '.join(CATEGORIES)}"
                )
            if profile not in self.profiles:
                raise ValueError(
                    f"answer.profiles.categories.{category}: no profile {profile!r}; "
                    f"define it in answer.profiles.templates or use one of "
                    f"{', '.join(sorted(self.profiles))}"
                )
        for name, text in self.templates.items():
            if not text.strip():
                raise ValueError(f"answer.profiles.templates.{name} is empty")
        return self

    @property
    def profiles(self) -> dict[str, str]:
        """Every profile: the built-ins, overridden or extended by ``templates``."""
        return {**DEFAULT_PROFILES, **self.templates}

    def profile_for(self, category: str) -> str:
        """The profile name a question of ``category`` is answered with."""
        return self.categories.get(category, category)
