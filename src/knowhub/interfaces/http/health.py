"""What ``/health`` and ``/ready`` answer, without queueing behind searches.

``/health`` is liveness: it answers from memory, in constant time, on the event loop, so
a saturated worker pool cannot make a load balancer think the process is dead. The index
sizes it shows a token come from a snapshot taken at warm-up and refreshed in the
background (one thread, never the search pool) when older than :data:`SNAPSHOT_MAX_AGE_S`.

``/ready`` is readiness: 503 until the warm-up has loaded every model and index, and while
the store does not answer a trivial read within :data:`PROBE_TIMEOUT_S`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from knowhub.app import App
from knowhub.interfaces.warmup import warm

__all__ = ["PROBE_TIMEOUT_S", "SNAPSHOT_MAX_AGE_S", "HealthState"]

log = logging.getLogger("knowhub.http")

SNAPSHOT_MAX_AGE_S = 10.0
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class _Sizes:
    taken: float  # time.monotonic()
    collections: tuple[tuple[str, int, int], ...]  # name, documents, chunks


class HealthState:
    """Warm-up state, the index-size snapshot and the store probe of one server."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.started = time.time()
        self.warmed = threading.Event()
        self._warm_lock = threading.Lock()
        self._sizes = _Sizes(0.0, ())
        self._refreshing = threading.Lock()
        # One probe at a time: a store that hangs holds one thread, not one per /ready.
        self._probe = anyio.CapacityLimiter(1)

    def warm(self) -> None:
        """Load every model and index (once; later calls return at once), then take the
        first snapshot; ``/ready`` answers 200 from here on."""
        with self._warm_lock:
            if self.warmed.is_set():
                return
            warm(self.app)
            self._refresh()
            self.warmed.set()

    def sizes(self, app: App) -> dict[str, Any]:
        """Counts over the collections ``app``'s caller may read (``App.visible``), from the
        latest snapshot; no document or chunk totals for a caller with a data scope (they
        would count what it cannot see: /api/collections counts what it sees)."""
        sizes = self._sizes
        if time.monotonic() - sizes.taken > SNAPSHOT_MAX_AGE_S and self.warmed.is_set():
            self._refresh_in_background()
        readable = app.visible(sizes.collections, lambda c: c[0])
        out: dict[str, Any] = {"collections": len(readable)}
        if app.scope.unrestricted:  # the snapshot counts every document, hidden ones too
            out["documents"] = sum(c[1] for c in readable)
            out["chunks"] = sum(c[2] for c in readable)
        out["counted_s_ago"] = round(time.monotonic() - sizes.taken, 1) if sizes.taken else None
        return out

    async def problem(self) -> str | None:
        """Why the server is not ready, or None. Safe to tell anyone: no internals."""
        if not self.warmed.is_set():
            return "warming up: models and indexes are loading"
        failure: list[BaseException] = []

        def probe() -> None:
            try:
                self.app.store.get_meta("health:probe")  # a read that finds nothing
            except Exception as exc:  # any failure means "not ready"; the log has the cause
                failure.append(exc)

        with anyio.move_on_after(PROBE_TIMEOUT_S) as scope:
            await anyio.to_thread.run_sync(probe, limiter=self._probe, abandon_on_cancel=True)
        if scope.cancelled_caught:
            return f"the store did not answer within {PROBE_TIMEOUT_S:g} s"
        if failure:
            log.warning("readiness probe: the store failed: %s", failure[0])
            return "the store is unreachable: see the server log"
        return None

    def _refresh_in_background(self) -> None:
        if not self._refreshing.locked():
            threading.Thread(target=self._refresh, name="knowhub-health", daemon=True).start()

    def _refresh(self) -> None:
        if not self._refreshing.acquire(blocking=False):
            return  # another refresh is under way
        try:
            views = self.app.collections()
            self._sizes = _Sizes(
                time.monotonic(), tuple((v.name, v.documents, v.chunks) for v in views)
            )
        except Exception as exc:  # the snapshot stays as it was; /ready reports the store
            log.warning("index sizes for /health not refreshed: %s", exc)
        finally:
            self._refreshing.release()
