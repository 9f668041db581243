"""Index sizes and each collection's active version as Prometheus gauges, read from the
store at scrape time, and only those of collections the scraping token may read (a token
limited to one collection must not learn the others' names or sizes from ``/metrics``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from knowhub.caller import Caller
from knowhub.versions.record import CollectionView

__all__ = ["IndexSize", "IndexSizes", "Sizes", "counts", "visible"]


@dataclass(frozen=True)
class IndexSize:
    """One served collection's size; ``session`` is its shared-mode session, if any."""

    collection: str
    documents: int
    chunks: int
    session: str | None = None
    active_version: int = 1

    @classmethod
    def of(cls, view: CollectionView, session: str | None = None) -> IndexSize:
        return cls(view.name, view.documents, view.chunks, session, view.active_version)

    @property
    def label(self) -> str:
        return f"{self.session}/{self.collection}" if self.session else self.collection


Sizes = Callable[[], Iterable[IndexSize]]
"""Yields the size of every index served."""


def visible(sizes: Sizes, principal: Caller | None) -> list[IndexSize]:
    """The sizes ``principal`` may see: the same filter every listing goes through, and only
    the sessions it may use; none to a caller with a data scope (whole-collection sizes
    would count the documents its scope hides: its /api/collections counts what it sees)."""
    if principal is None or not principal.scope.unrestricted:
        return []
    try:
        rows = list(sizes())
    except Exception:  # a scrape must not fail because one store is busy or gone
        return []
    in_session = [r for r in rows if r.session is None or principal.may_use(r.session)]
    return principal.readable(in_session, lambda r: r.collection)


def counts(sizes: Sizes, principal: Caller) -> dict[str, int]:
    """What ``/health`` tells a limited caller: how many collections it may read and their
    chunks; nothing to a caller with a data scope (see :func:`visible`)."""
    if not principal.scope.unrestricted:
        return {}
    rows = visible(sizes, principal)
    return {"collections": len(rows), "chunks": sum(r.chunks for r in rows)}


class IndexSizes:
    """``knowhub_index_documents``, ``knowhub_index_chunks`` and
    ``knowhub_index_active_version`` per collection.

    Read when Prometheus scrapes, so the numbers are never stale and cost nothing between
    scrapes; a store that cannot be read is left out of that scrape.
    """

    def __init__(self, sizes: Sizes) -> None:
        self._sizes = sizes

    def render(self, principal: Caller | None) -> bytes:
        """The two gauges in the text format, for what ``principal`` may read (None: nothing)."""
        registry = CollectorRegistry()
        registry.register(_Scoped(self._sizes, principal))
        return generate_latest(registry)


class _Scoped(Collector):
    def __init__(self, sizes: Sizes, principal: Caller | None) -> None:
        self._sizes = sizes
        self._principal = principal

    def collect(self) -> Iterator[Any]:
        documents = GaugeMetricFamily(
            "knowhub_index_documents", "Documents indexed", labels=["collection"]
        )
        chunks = GaugeMetricFamily("knowhub_index_chunks", "Chunks indexed", labels=["collection"])
        active = GaugeMetricFamily(
            "knowhub_index_active_version",
            "The version of the collection that answers (knowhub versions)",
            labels=["collection"],
        )
        for row in visible(self._sizes, self._principal):
            documents.add_metric([row.label], row.documents)
            chunks.add_metric([row.label], row.chunks)
            active.add_metric([row.label], row.active_version)
        yield documents
        yield chunks
        yield active
