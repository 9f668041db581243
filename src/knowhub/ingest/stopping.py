"""How an ingest run stops before its end: Ctrl-C (:class:`IngestStopped`), the process
shutting down (:func:`stop_ingests`) or a disk the store cannot write; each keeps every
document already written, whole, and says so in its report."""

from __future__ import annotations

import threading

from knowhub.errors import IngestError
from knowhub.ingest.embed import abort_all
from knowhub.ingest.report import IngestReport

__all__ = [
    "DiskTroubleError",
    "IngestCancelledError",
    "IngestStopped",
    "ShutdownRequestedError",
    "sleep_unless_shutting_down",
    "stop_if_shutting_down",
    "stop_ingests",
]


class IngestStopped(KeyboardInterrupt):
    """An ingest run interrupted by a ``KeyboardInterrupt`` (Ctrl-C; the CLI raises one
    on SIGTERM too).

    A ``KeyboardInterrupt``, so that it goes on stopping the program; ``report`` says
    what was written (each document whole) and what was not.
    """

    def __init__(self, report: IngestReport) -> None:
        super().__init__(f"ingest stopped: {report.stop_summary()}")
        self.report = report


class IngestCancelledError(IngestError):
    """An ingest run stopped before its end: by :func:`stop_ingests` (its process is
    shutting down), or because the store's disk cannot be written (full, read-only), which
    would fail every file after it the same way; ``report`` says what was written."""

    def __init__(self, report: IngestReport, reason: str = "the server is shutting down") -> None:
        super().__init__(
            f"ingest stopped: {reason}; {report.stop_summary()}; run it again to continue"
        )
        self.report = report


_shutting_down = threading.Event()


def stop_ingests() -> None:
    """Stop every ingest run of this process now, each with :class:`IngestCancelledError`
    (documents written are kept): a server shutting down would otherwise wait for them to
    end. For good: the process is ending."""
    _shutting_down.set()
    abort_all()  # a run waiting on its workers' batches stops waiting


def stop_if_shutting_down() -> None:
    if _shutting_down.is_set():
        raise ShutdownRequestedError


def sleep_unless_shutting_down(seconds: float) -> None:
    """Sleep ``seconds``, or raise :class:`ShutdownRequestedError` as soon as
    :func:`stop_ingests` is called (a crawl waiting out a robots.txt Crawl-delay)."""
    if _shutting_down.wait(seconds):
        raise ShutdownRequestedError


class ShutdownRequestedError(Exception):
    """Raised between documents once :func:`stop_ingests` was called."""


class DiskTroubleError(Exception):
    """Raised when the store's disk fails a write (full, read-only): the run stops."""
