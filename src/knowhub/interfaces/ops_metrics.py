"""Series both servers export (``serve http`` and ``serve mcp``) for operators' alerts:
what ingests did, and how full the data dir's volume is (read at scrape time)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge

if TYPE_CHECKING:  # not imported by the servers' start (cold start)
    from knowhub.ingest.pipeline import IngestReport

__all__ = ["IngestCounters", "track_volume"]


class IngestCounters:
    """``knowhub_ingest_documents{result}``, ``knowhub_ingest_failures``,
    ``knowhub_ingest_chunks``: counted from each ingest's report."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.documents = Counter(
            "knowhub_ingest_documents", "Documents ingested", ["result"], registry=registry
        )
        self.failures = Counter(
            "knowhub_ingest_failures", "Files that failed to ingest", registry=registry
        )
        self.chunks = Counter(
            "knowhub_ingest_chunks", "Chunks written by ingests", registry=registry
        )

    def record(self, report: IngestReport) -> None:
        for result, items in (
            ("added", report.added),
            ("updated", report.updated),
            ("removed", report.removed),
        ):
            if items:
                self.documents.labels(result).inc(len(items))
        if report.failed:
            self.failures.inc(len(report.failed))
        self.chunks.inc(report.chunks)


def track_volume(registry: CollectorRegistry, data_dir: Path) -> None:
    """``knowhub_data_volume_free_bytes`` and ``_size_bytes`` of the volume holding
    ``data_dir`` (NaN while it cannot be read: a scrape never fails on it)."""
    free = Gauge(
        "knowhub_data_volume_free_bytes",
        "Bytes free for knowhub on the data dir's volume",
        registry=registry,
    )
    size = Gauge(
        "knowhub_data_volume_size_bytes", "Size of the data dir's volume", registry=registry
    )
    free.set_function(lambda: _usage(data_dir)[1])
    size.set_function(lambda: _usage(data_dir)[0])


def _usage(folder: Path) -> tuple[float, float]:
    """(size, free) of the volume holding ``folder`` or its nearest existing parent."""
    for candidate in (folder, *folder.parents):
        try:
            usage = shutil.disk_usage(candidate)
        except OSError:
            continue
        return float(usage.total), float(usage.free)
    return float("nan"), float("nan")
