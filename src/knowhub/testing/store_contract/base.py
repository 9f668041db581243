"""The fixtures every contract test uses, and the helpers that read search results."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from knowhub.lang import query_tokens
from knowhub.models import Filters, Hit
from knowhub.providers.stores.base import Store

__all__ = [
    "NO_FILTERS",
    "BackendFactory",
    "Opener",
    "StoreFixtures",
    "lexical",
    "non_increasing",
    "resolved",
    "sources",
    "texts",
]

Opener = Callable[[], Store]
BackendFactory = Callable[[Path], Opener]
NO_FILTERS: Filters = {}


class StoreFixtures:
    """``opener`` and ``store`` for a test, from the ``store_factory`` fixture.

    ``store_factory`` (the subclass's, or a conftest's) is ``(tmp_path) -> opener``: every
    ``opener()`` call opens a store on one location of that test alone and reaches the
    *same* data (reopen after close, a second connection for concurrent readers).
    """

    @pytest.fixture
    def opener(self, store_factory: BackendFactory, tmp_path: Path) -> Iterator[Opener]:
        """Opens the test's store; every store it opened is closed when the test ends."""
        base = store_factory(tmp_path)
        opened: list[Store] = []

        def open_store() -> Store:
            store = base()
            opened.append(store)
            return store

        yield open_store
        for store in opened:
            store.close()  # close() is idempotent: tests may have closed some already

    @pytest.fixture
    def store(self, opener: Opener) -> Store:
        return opener()


def lexical(
    store: Store, cid: int, query: str, limit: int = 50, filters: Filters = NO_FILTERS
) -> list[tuple[int, float]]:
    """The lexical leg's results for ``query`` (tokenised as knowhub tokenises queries)."""
    return store.lexical_search(cid, query_tokens(query), limit, filters)


def resolved(store: Store, results: Sequence[tuple[int, float]]) -> list[Hit]:
    """The hits of search results, in result order (every id must resolve)."""
    rows = store.hits([rowid for rowid, _ in results])
    assert set(rows) == {rowid for rowid, _ in results}, "a search returned an unknown row id"
    return [rows[rowid] for rowid, _ in results]


def texts(store: Store, results: Sequence[tuple[int, float]]) -> list[str]:
    """The texts of search results, in result order."""
    return [hit.text for hit in resolved(store, results)]


def sources(store: Store, results: Sequence[tuple[int, float]]) -> set[str]:
    """The sources search results come from."""
    return {hit.source for hit in resolved(store, results)}


def non_increasing(results: Sequence[tuple[int, float]]) -> bool:
    """Whether the scores never rise along the results."""
    scores = [score for _, score in results]
    return all(a >= b for a, b in itertools.pairwise(scores))
