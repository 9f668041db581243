"""The chat's numbered sources: every knowledge-base chunk a tool showed the model gets one
number for the whole chat, so ``[n]`` in the answer means the same thing in every step."""

from __future__ import annotations

import re
import threading
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
        self._lock = threading.Lock()  # tools of one turn may run on other threads

    def __len__(self) -> int:
        return len(self._hits)

    def number(self, hit: Hit) -> int:
        """The number ``hit`` is cited by (the one it got when first shown, if it was)."""
        with self._lock:
            found = self._numbers.get(hit.chunk_id)
            if found is None:
                self._hits.append(hit)
                found = self._numbers[hit.chunk_id] = len(self._hits)
            return found

    def cited(self, answer: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The sources ``answer`` cites (first-cited order, as ``knowhub ask`` lists them),
        and the numbers it cites that no tool showed."""
        marks = list(dict.fromkeys(int(m) for m in _MARK.findall(answer)))
        with self._lock:
            valid = [n for n in marks if 1 <= n <= len(self._hits)]
            sources = [source_dict(n, self._hits[n - 1]) for n in valid]
        return sources, [n for n in marks if n not in valid]
