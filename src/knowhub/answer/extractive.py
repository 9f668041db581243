"""The offline answer: the sentences of the top sources that best match the question."""

from __future__ import annotations

from collections.abc import Sequence

from knowhub.answer.text import coverage
from knowhub.lang.sentences import sentences
from knowhub.models import Hit

__all__ = ["extractive_answer"]


def extractive_answer(question: str, sources: Sequence[Hit], max_sentences: int = 3) -> str:
    """Up to ``max_sentences`` sentences, each cited ``[n]`` (n: 1-based source number).

    A sentence scores by how many question terms it holds, a little less for each
    rank its source is below the first; the picks are printed in source order so
    the answer reads like the documents. A sentence holding under half as many question
    terms as the best one is left out (one shared word is not an answer). When no
    sentence shares a term with the question, the first sentences of the top source
    stand in.
    """
    found = [
        (coverage(question, sentence), n, position, sentence)
        for n, hit in enumerate(sources, start=1)
        for position, sentence in enumerate(sentences(hit.text))
    ]
    found = [f for f in found if f[0] > 0]
    if not found and sources:
        # Found by meaning, not by words (a paraphrase): the top source's opening is the
        # best guess at the relevant part.
        opening = sentences(sources[0].text)[:max_sentences]
        return " ".join(f"{sentence} [1]" for sentence in opening)
    top = max((f[0] for f in found), default=0.0)
    kept = [f for f in found if f[0] >= top / 2]
    best = sorted(kept, key=lambda f: -(f[0] - 0.05 * (f[1] - 1)))[:max_sentences]
    best.sort(key=lambda f: (f[1], f[2]))
    return " ".join(f"{sentence} [{n}]" for _, n, _, sentence in best)
