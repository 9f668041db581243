"""A chat turn's numbered sources: every knowledge-base chunk a tool showed the model gets
one number for the whole turn, so ``[n]`` means the same thing in every step of it."""

from __future__ import annotations

import re
from typing import Any

from knowhub.answer.events import source_dict
from knowhub.models import Hit

__all__ = ["SourceBook"]

_MARK = re.compile(r"\[(\d{1,3})\]")


class SourceBook:
    """Chunks shown to the model, numbered from 1 in the order they were first shown."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._hits: list[Hit] = []

    def collections(self) -> set[str]:
        """The collections the numbered chunks came from."""
        return {hit.collection for hit in self._hits}

    def number(self, hit: Hit) -> int:
        """The number ``hit`` is cited by (the one it got when first shown, if it was)."""
        found = self._numbers.get(hit.chunk_id)
        if found is None:
            self._hits.append(hit)
            found = self._numbers[hit.chunk_id] = len(self._hits)
        return found

    def cited(self, answer: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The sources ``answer`` cites (first-cited order, as ``knowhub ask`` lists them),
        and the numbers it cites that no tool showed."""
        marks = list(dict.fromkeys(int(m) for m in _MARK.findall(answer)))
        valid = [n for n in marks if 1 <= n <= len(self._hits)]
        sources = [source_dict(n, self._hits[n - 1]) for n in valid]
        return sources, [n for n in marks if n not in valid]
