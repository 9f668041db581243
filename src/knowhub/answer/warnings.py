"""What a reader must know before relying on an answer, in words every interface shows.

The CLI's text, the web console's answer and the MCP ``ask`` tool's text all show these
lines (from the answer's ``warnings``), not only its JSON: weak evidence
(``low_top_score``), sentences not fully backed by what they cite, and an extractive answer
that is only quoted (not shown to answer the question). Terms the documents do not mention
are said by the answer's text itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from knowhub.answer.events import Answer

__all__ = ["warning_lines"]


def warning_lines(answer: Answer) -> list[str]:
    """The answer's warnings, most important first (none for an answer to trust)."""
    lines: list[str] = []
    # What the documents do not mention is not repeated here: the answer's own text ends
    # with it, in the question's language (knowhub.answer.coverage).
    if "low_top_score" in answer.reasons:
        lines.append(
            f"Weak evidence: the best source's relevance is only {answer.evidence:.2f}; "
            "read the sources before relying on the answer."
        )
    check = answer.verification
    if check is None:
        return lines
    if check.status == "quoted":
        lines.append(
            "Quoted, not verified: these sentences are from the sources, but they were not "
            "shown to answer the question."
        )
    elif check.status == "partially_supported":
        lines.append(
            f"Partly supported: {len(check.flagged)} of {len(check.judged)} sentences are "
            "not fully backed by what they cite."
        )
    elif check.status == "unsupported":
        lines.append("Unsupported: no sentence is backed by what it cites.")
    return lines
