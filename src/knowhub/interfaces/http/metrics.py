"""Prometheus metrics of the HTTP API (``GET /metrics``), in a registry of its own.

Routes are labelled by their template (``/api/search``), never by the raw path, so a
scanner probing random URLs cannot grow the series without bound. Nothing is per collection
except the index sizes, which each scrape shows only for what the scraping token may read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from knowhub.caller import Caller
from knowhub.interfaces.index_metrics import IndexSizes, Sizes
from knowhub.interfaces.ops_metrics import IngestCounters

__all__ = ["ERROR_KEY", "ApiMetrics", "MetricsMiddleware"]

ERROR_KEY = "knowhub.error"
"""Where a route notes the kind of error it answered with (the error's class name)."""

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ApiMetrics:
    def __init__(self) -> None:
        # The *_created series only add noise to a scrape.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry()
        self.index: IndexSizes | None = None
        self.requests = Counter(
            "knowhub_http_requests",
            "Requests answered, by route, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.errors = Counter(
            "knowhub_http_errors",
            "Failed requests and failed streams, by route and error",
            ["route", "error"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "knowhub_http_request_seconds",
            "Time to the end of the response, by route",
            ["route"],
            registry=self.registry,
            buckets=_SECONDS,
        )
        self.stages = Histogram(
            "knowhub_stage_seconds",
            "Time per search and answer stage",
            ["stage"],
            registry=self.registry,
            buckets=_SECONDS,
        )
        self.searches = Counter(
            "knowhub_searches", "Searches run, by endpoint", ["endpoint"], registry=self.registry
        )
        self.answers = Counter(
            "knowhub_answers", "Answers given, by hit type", ["hit_type"], registry=self.registry
        )
        self.ingest = IngestCounters(self.registry)  # the console's uploads and re-ingests
        self.websockets = Gauge(
            "knowhub_websocket_connections", "Open WebSocket connections", registry=self.registry
        )

    def observe_stages(self, timings_ms: Mapping[str, float]) -> None:
        for stage, ms in timings_ms.items():
            self.stages.labels(stage).observe(ms / 1000.0)

    def track_index(self, sizes: Sizes) -> None:
        self.index = IndexSizes(sizes)

    def render(self, principal: Caller | None) -> bytes:
        """Every series, the index sizes of what ``principal`` may read among them."""
        scoped = self.index.render(principal) if self.index else b""
        return generate_latest(self.registry) + scoped


class MetricsMiddleware:
    """Counts every HTTP response (those the guard refuses included) and times it."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics, routes: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = self._route(scope)
            self.metrics.requests.labels(route, scope["method"], str(status[0])).inc()
            self.metrics.latency.labels(route).observe(time.perf_counter() - started)
            if status[0] >= 400:
                self.metrics.errors.labels(route, scope.get(ERROR_KEY, str(status[0]))).inc()

    def _route(self, scope: Scope) -> str:
        matched = getattr(scope.get("route"), "path", None)
        if isinstance(matched, str):
            return matched
        # Refused before routing (no token, foreign origin): the path, if it is one of ours.
        path = str(scope.get("path", ""))
        return path if path in self.routes else "unmatched"
