"""The grounded prompt: numbered sources in the system message, then the conversation."""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.config.answer import DEFAULT_PROFILES
from knowhub.models import Hit
from knowhub.providers.llms.base import ChatMessage

__all__ = ["SYSTEM_RULES", "build_messages", "rewrite_messages", "source_label"]

SYSTEM_RULES = DEFAULT_PROFILES["general"]
"""The general profile: the rules every built-in profile starts with."""


def source_label(n: int, hit: Hit) -> str:
    parts = [f"[{n}] {hit.source}"]
    if hit.page:
        parts.append(f"page {hit.page}")
    if hit.section_path:
        parts.append(f"section: {hit.section_path}")
    return " — ".join(parts)


def build_messages(
    question: str,
    sources: Sequence[Hit],
    history: Sequence[ChatMessage] = (),
    max_source_chars: int = 1500,
    rules: str = SYSTEM_RULES,
) -> list[ChatMessage]:
    """System rules (the answer's prompt profile) + numbered sources, earlier turns, then
    the question."""
    blocks = [
        f"{source_label(n, hit)}\n{hit.text[:max_source_chars]}"
        for n, hit in enumerate(sources, start=1)
    ]
    system = f"{rules}\n\nSources:\n\n" + "\n\n".join(blocks)
    return [ChatMessage("system", system), *history, ChatMessage("user", question)]


def rewrite_messages(question: str, history: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Ask for the follow-up ``question`` rewritten as a standalone search query."""
    turns = "\n".join(f"{m.role}: {m.content[:500]}" for m in history[-6:])
    return [
        ChatMessage(
            "system",
            "Rewrite the user's last question as one standalone search query that can be "
            "understood without the conversation (resolve pronouns and references). Keep its "
            "language. Reply with the query only.",
        ),
        ChatMessage("user", f"Conversation:\n{turns}\n\nLast question: {question}"),
    ]
