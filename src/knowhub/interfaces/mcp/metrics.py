"""Prometheus metrics of one server process (``GET /metrics``).

Nothing here is per collection or session except the index sizes, which each scrape shows
only for what the scraping token may read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

from knowhub.caller import Caller
from knowhub.interfaces.index_metrics import IndexSizes, Sizes
from knowhub.interfaces.ops_metrics import IngestCounters

if TYPE_CHECKING:  # not imported by the server's start (cold start)
    from knowhub.ingest.pipeline import IngestReport

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        # The *_created series only add noise to a scrape.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        self.index: IndexSizes | None = None
        self.searches = Counter(
            "knowhub_searches", "Searches run", ["interface", "tool"], registry=self.registry
        )
        self.search_seconds = Histogram(
            "knowhub_search_seconds",
            "Search latency",
            ["interface"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        self.tool_calls = Counter(
            "knowhub_tool_calls", "MCP tool calls", ["tool", "outcome"], registry=self.registry
        )
        self.ingest = IngestCounters(self.registry)
        self.stage_seconds = Histogram(
            "knowhub_stage_seconds",
            "Search stage latency",
            ["stage"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
        )
        self.sessions = Gauge(
            "knowhub_sessions", "Shared-mode sessions", ["state"], registry=self.registry
        )

    def track_sessions(self, registered: Callable[[], int], loaded: Callable[[], int]) -> None:
        self.sessions.labels("registered").set_function(registered)
        self.sessions.labels("loaded").set_function(loaded)

    def record_ingest(self, report: IngestReport) -> None:
        self.ingest.record(report)

    def track_index(self, sizes: Sizes) -> None:
        self.index = IndexSizes(sizes)

    def render(self, principal: Caller | None) -> bytes:
        """Every series, the index sizes of what ``principal`` may read among them."""
        scoped = self.index.render(principal) if self.index else b""
        return generate_latest(self.registry) + scoped
