"""Index sizes as Prometheus gauges, read from the store at scrape time."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["IndexSizes"]

Sizes = Callable[[], Iterable[tuple[str, int, int]]]
"""Yields ``(collection label, documents, chunks)`` for every index served."""


class IndexSizes(Collector):
    """``knowhub_index_documents`` and ``knowhub_index_chunks`` per collection.

    Read when Prometheus scrapes, so the numbers are never stale and cost nothing between
    scrapes; a store that cannot be read is left out of that scrape.
    """

    def __init__(self, sizes: Sizes) -> None:
        self._sizes = sizes

    def collect(self) -> Iterator[Any]:
        documents = GaugeMetricFamily("knowhub_index_documents", "Documents indexed",
                                      labels=["collection"])  # fmt: skip
        chunks = GaugeMetricFamily("knowhub_index_chunks", "Chunks indexed",
                                   labels=["collection"])  # fmt: skip
        try:
            rows = list(self._sizes())
        except Exception:  # a scrape must not fail because one store is busy or gone
            rows = []
        for name, docs, count in rows:
            documents.add_metric([name], docs)
            chunks.add_metric([name], count)
        yield documents
        yield chunks
