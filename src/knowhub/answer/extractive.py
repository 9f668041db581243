"""The offline answer: the sentences of the top sources that best match the question."""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.answer.text import coverage, sentences
from knowhub.models import Hit

__all__ = ["extractive_answer"]


def extractive_answer(question: str, sources: Sequence[Hit], max_sentences: int = 3) -> str:
    """Up to ``max_sentences`` sentences, each cited ``[n]`` (n: 1-based source number).

    A sentence scores by how many question terms it holds, a little less for each
    rank its source is below the first; the picks are printed in source order so
    the answer reads like the documents. When no sentence shares a term with the
    question, the first sentences of the top source stand in.
    """
    scored: list[tuple[float, int, int, str]] = []
    for n, hit in enumerate(sources, start=1):
        for position, sentence in enumerate(sentences(hit.text)):
            overlap = coverage(question, sentence)
            if overlap > 0:
                scored.append((overlap - 0.05 * (n - 1), n, position, sentence))
    if not scored and sources:
        # Found by meaning, not by words (a paraphrase): the top source's opening is the
        # best guess at the relevant part.
        opening = sentences(sources[0].text)[:max_sentences]
        return " ".join(f"{sentence} [1]" for sentence in opening)
    best = sorted(scored, key=lambda s: -s[0])[:max_sentences]
    best.sort(key=lambda s: (s[1], s[2]))
    return " ".join(f"{sentence} [{n}]" for _, n, _, sentence in best)
