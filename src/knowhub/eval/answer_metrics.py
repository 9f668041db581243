"""Whether an answer can be trusted on real documents, as small pure functions over one
answer: its first source, the place it cites, its keywords, whether it refused.

Each returns the case's score and, when it fell short, the problem in words (None: met).
"""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.answer.events import Answer
from knowhub.eval.golden import AnswerCase
from knowhub.eval.metrics import said
from knowhub.models import Hit

__all__ = ["is_refusal", "keywords_present", "place_hit", "right_place", "source_first"]


def source_first(case: AnswerCase, answer: Answer) -> tuple[float, str | None]:
    """1 when the answer's first source (the top hit it used, or listed when it refused)
    is one of the expected sources."""
    first = answer.sources[0].source if answer.sources else None
    if first in case.sources:
        return 1.0, None
    return 0.0, f"first source {first or 'none'}, expected {' or '.join(case.sources)}"


def place_hit(case: AnswerCase, answer: Answer) -> list[Hit]:
    """The hits from an expected document whose place is judged: those the answer's valid
    ``[n]`` citations name, or, when it cites nothing, its first source from one."""
    hits = answer.sources
    cited = [hits[n - 1] for n in answer.citations.cited if 1 <= n <= len(hits)]
    if cited:
        return [hit for hit in cited if hit.source in case.sources]
    return next(([hit] for hit in hits if hit.source in case.sources), [])


def right_place(case: AnswerCase, answer: Answer) -> tuple[float, str | None]:
    """1 when a hit of :func:`place_hit` is at every place the case gives: a section path
    containing ``expected_section`` (case and spacing ignored), a page within
    ``expected_page``."""
    hits = place_hit(case, answer)
    if any(_at(case, hit) for hit in hits):
        return 1.0, None
    where = [f"section {case.section!r}"] if case.section else []
    if case.pages is not None:
        first, last = case.pages
        where.append(f"page {first}" if first == last else f"pages {first}-{last}")
    cited = "; ".join(_place(hit) for hit in hits) or "nothing from an expected source"
    return 0.0, f"cites {cited}, expected {' '.join(where)}"


def keywords_present(case: AnswerCase, answer: Answer) -> float:
    """1 when every expected keyword is in the answer's text (as ``said`` finds them)."""
    return float(len(said(case.keywords, answer.text)) == len(case.keywords))


def is_refusal(answer: Answer) -> bool:
    """Whether the answer refused: no answer from the documents (``insufficient_context``),
    or one saying what they do not mention (``not_mentioned``)."""
    return answer.hit_type == "insufficient_context" or bool(answer.not_mentioned)


def _at(case: AnswerCase, hit: Hit) -> bool:
    if case.section is not None and _normal(case.section) not in _normal(hit.section_path):
        return False
    if case.pages is not None:
        return hit.page is not None and case.pages[0] <= hit.page <= case.pages[1]
    return True


def _place(hit: Hit) -> str:
    parts: Sequence[str] = [hit.source, f"section {hit.section_path!r}"]
    return " ".join([*parts, f"page {hit.page}"] if hit.page is not None else parts)


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())
