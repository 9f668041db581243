"""The optional LLM verifier (``answer.verification.llm``): the model judges each sentence.

Words and embeddings cannot read a negation or a swapped subject ("backups are not kept");
a model can. Its verdict replaces the measured status of each sentence it judges, except
that a number missing from the cited sources keeps a sentence unsupported whatever the
model says. Any failure keeps the measured verdicts and says why in ``note``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from knowhub.answer.prompt import source_label
from knowhub.answer.verify import Verification
from knowhub.errors import KnowhubError
from knowhub.models import Hit
from knowhub.providers.llms.base import LLM, ChatMessage

__all__ = ["PROMPT", "review"]

PROMPT = (
    "You check whether numbered sources support the sentences of an answer. For each "
    "sentence, judge only from the sources it cites (all sources when it cites none): "
    "supported (the sources state it), partial (they state part of it) or unsupported. "
    'Reply with JSON only: {"verdicts": ["supported" | "partial" | "unsupported", ...]}, '
    "one verdict per sentence, in order."
)
_VERDICTS = ("supported", "partial", "unsupported")


def review(
    llm: LLM, verification: Verification, sources: Sequence[Hit], max_source_chars: int
) -> None:
    """Let ``llm`` judge ``verification``'s sentences in place (one JSON-mode call)."""
    judged = verification.judged
    if not judged:
        return
    blocks = [
        f"{source_label(n, hit)}\n{hit.text[:max_source_chars]}"
        for n, hit in enumerate(sources, start=1)
    ]
    lines = [
        f"{i}. {s.text} {''.join(f'[{n}]' for n in s.citations)}".rstrip()
        for i, s in enumerate(judged, start=1)
    ]
    content = "Sources:\n\n" + "\n\n".join(blocks) + "\n\nSentences:\n" + "\n".join(lines)
    messages = [ChatMessage("system", PROMPT), ChatMessage("user", content)]
    try:
        raw = llm.complete(
            messages, json_mode=True, max_tokens=50 + 10 * len(judged), temperature=0
        )
        verdicts = json.loads(raw)["verdicts"]
        if not isinstance(verdicts, list) or len(verdicts) != len(judged):
            raise ValueError(f"{len(judged)} verdicts expected, got {verdicts!r}"[:200])
        if any(v not in _VERDICTS for v in verdicts):
            raise ValueError(f"verdicts must be one of {_VERDICTS}, got {verdicts!r}"[:200])
    except (KnowhubError, ValueError, KeyError, TypeError) as exc:
        verification.note = f"LLM verifier failed, measured verdicts kept: {exc}"
        return
    for check, verdict in zip(judged, verdicts, strict=True):
        if check.issue != "number_not_in_source":
            check.status = verdict
    verification.method += "+llm"
