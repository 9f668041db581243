"""An exact in-memory :class:`~knowhub.providers.stores.indexed.index.VectorIndex` that
fails on demand, to test a catalog + external index store without Milvus or Chroma.

A failure stands for a process killed, or a server lost, between the steps of a write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.indexed.index import IndexRow

__all__ = ["IndexDownError", "MemoryIndex", "RacingIndex"]


class IndexDownError(Exception):
    """The index failed (a killed process stops at the same point)."""


class MemoryIndex:
    """An exact in-memory index; ``fail`` names the operation that raises next."""

    name = "memory"

    def __init__(self, lexical: bool = False) -> None:
        self.lexical = lexical
        self.spaces: dict[str, dict[int, tuple[IndexRow, Vectors]]] = {}
        self.fail: str | None = None

    def _check(self, op: str) -> None:
        if self.fail == op:
            self.fail = None
            raise IndexDownError(op)

    def create(self, space: str, dim: int) -> None:
        self.spaces.setdefault(space, {})

    def drop(self, space: str) -> None:
        self._check("drop")
        self.spaces.pop(space, None)

    def upsert(self, space: str, rows: Sequence[IndexRow], vectors: Vectors) -> None:
        self._check("upsert")
        for row, vector in zip(rows, vectors, strict=True):
            self.spaces[space][row.id] = (row, np.asarray(vector, dtype=np.float32))

    def delete(self, space: str, ids: Sequence[int]) -> None:
        self._check("delete")
        for row_id in ids:
            self.spaces.get(space, {}).pop(row_id, None)

    def dense_search(
        self, space: str, query: Vectors, limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        scored = [
            (row_id, float(vector @ query))
            for row_id, (row, vector) in self.spaces.get(space, {}).items()
            if all(set(group) & set(row.terms) for group in groups)
        ]
        return sorted(scored, key=lambda s: -s[1])[:limit]

    def lexical_search(
        self, space: str, tokens: Sequence[str], limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        scored = [
            (row_id, float(sum(row.tokens.split().count(t) for t in tokens)))
            for row_id, (row, _) in self.spaces.get(space, {}).items()
            if all(set(group) & set(row.terms) for group in groups)
        ]
        return sorted([s for s in scored if s[1] > 0], key=lambda s: -s[1])[:limit]

    def ids(self, space: str) -> set[int]:
        return set(self.spaces.get(space, {}))

    def present(self, space: str, ids: Sequence[int]) -> set[int]:
        return set(ids) & self.ids(space)

    def close(self) -> None:
        pass


class RacingIndex(MemoryIndex):
    """Runs ``after_search`` once, right after its next dense search read the index."""

    def __init__(self) -> None:
        super().__init__()
        self.after_search: Callable[[], object] | None = None

    def dense_search(
        self, space: str, query: Vectors, limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        found = super().dense_search(space, query, limit, groups)
        action, self.after_search = self.after_search, None
        if action is not None:
            action()
        return found
