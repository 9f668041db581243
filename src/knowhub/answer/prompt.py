"""The grounded prompt: numbered sources in the system message, then the conversation."""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.models import Hit
from knowhub.providers.llms.base import ChatMessage

__all__ = ["SYSTEM_RULES", "build_messages", "rewrite_messages", "source_label"]

SYSTEM_RULES = (
    "You answer questions about the user's documents using only the numbered sources below. "
    "After each sentence, cite the sources that support it by number in square brackets, "
    "like [1] or [2][3]. If the sources do not contain the answer, say that the documents do "
    "not cover it; never guess or use outside knowledge. Answer in the language of the "
    "question, concisely."
)


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
) -> list[ChatMessage]:
    """System rules + numbered sources, earlier turns, then the question."""
    blocks = [
        f"{source_label(n, hit)}\n{hit.text[:max_source_chars]}"
        for n, hit in enumerate(sources, start=1)
    ]
    system = f"{SYSTEM_RULES}\n\nSources:\n\n" + "\n\n".join(blocks)
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
