"""Term overlap, for any mix of English, Chinese and Russian."""

from __future__ import annotations

from knowhub.lang import index_tokens, query_tokens

__all__ = ["coverage"]


def coverage(query: str, text: str) -> float:
    """Share of the query's terms (stemmed, stopwords out) that ``text`` contains, 0–1."""
    terms = query_tokens(query, joined=False)
    if not terms:
        return 0.0
    present = set(index_tokens(text))
    return sum(1 for t in terms if t in present) / len(terms)
