"""Requests spaced in time: at most ``requests_per_second`` to a site, or one per robots.txt
``Crawl-delay`` when it asks for fewer."""

from __future__ import annotations

import threading
import time

from knowhub.ingest.stopping import sleep_unless_shutting_down

__all__ = ["RateLimit"]


class RateLimit:
    """Spaces the starts of requests made from any thread by ``1 / per_second`` seconds."""

    def __init__(self, per_second: float) -> None:
        self._interval = 1.0 / per_second
        self._next = 0.0
        self._lock = threading.Lock()

    def at_least(self, seconds: float) -> None:
        """Space requests by ``seconds`` at least (robots.txt's Crawl-delay)."""
        self._interval = max(self._interval, seconds)

    def wait(self) -> None:
        """Return when the next request may start (raises
        :class:`~knowhub.ingest.stopping.ShutdownRequestedError` as soon as ingests stop)."""
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            sleep_unless_shutting_down(start - now)
