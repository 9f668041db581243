"""How well can a source answer a question? 0 (unrelated) to 1 (clearly about it)."""

from __future__ import annotations

from knowhub.answer.text import coverage
from knowhub.models import Hit

__all__ = ["evidence"]


def evidence(query: str, hit: Hit, dense_range: tuple[float, float] | None) -> float:
    """The larger of two signals: the share of the query's terms the source holds, and its
    dense similarity placed on the embedder's ``dense_range`` (low → 0, high → 1).

    Words alone miss paraphrases ("dial support on Saturday" vs "weekend hours"); the
    similarity alone misses exact names the model never saw. Either one is enough.
    """
    lexical = coverage(query, f"{hit.section_path}\n{hit.text}")
    if dense_range is None or hit.dense_score is None:
        return lexical
    low, high = dense_range
    dense = min(1.0, max(0.0, (hit.dense_score - low) / (high - low)))
    return max(lexical, dense)
