"""Reading a discovered file never blocks, and never exceeds its limits: real files,
real SQLite, the real pipeline (hashing embedder)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.ingest.pipeline import IngestProgress, IngestReport
from tests.helpers import WAIT_S, fast_settings, write


def test_file_that_became_a_fifo_after_discovery_fails_alone_without_blocking(
    app: App, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    write(docs / "a.md", "# A\n\nAlpha backups run nightly.\n")
    swapped = write(docs / "b.md", "# B\n\nBravo text.\n")
    write(docs / "c.md", "# C\n\nCharlie restores on Mondays.\n")

    def swap(step: IngestProgress) -> None:
        if step.source == "a.md":  # b.md was discovered as a file: now it is a FIFO
            swapped.unlink()
            os.mkfifo(swapped)

    reports: list[IngestReport] = []
    run = threading.Thread(
        target=lambda: reports.append(app.collection().ingest([docs], progress=swap)), daemon=True
    )
    run.start()
    run.join(timeout=WAIT_S)
    if run.is_alive():  # blocked on the FIFO: a writer releases it, then fail
        os.close(os.open(swapped, os.O_WRONLY | os.O_NONBLOCK))
        run.join(timeout=WAIT_S)
        pytest.fail("ingest blocked on a FIFO")
    (report,) = reports
    assert sorted(report.added) == ["a.md", "c.md"]
    assert report.failed == [
        (
            "b.md",
            f"{swapped}: is a FIFO (named pipe), not a regular file: knowhub reads "
            "only regular files; leave it out",
        ),
    ]


def test_limits_come_from_the_ingest_settings(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    big = write(docs / "big.txt", "word " * 400)
    long = write(docs / "long.md", "# Long\n\n" + "word " * 200)
    write(docs / "small.md", "# Small\n\nShort text.\n")
    settings = fast_settings(
        tmp_path / "data", **{"ingest.max_file_bytes": 1500, "ingest.max_extracted_chars": 900}
    )
    application = build_app(settings)
    try:
        report = application.collection().ingest([docs])
    finally:
        application.close()
    assert report.added == ["small.md"]
    assert dict(report.failed) == {
        "big.txt": f"{big}: too large: 2000 bytes > limit 1500; raise ingest.max_file_bytes",
        "long.md": f"{long}: extracts to more than 900 characters; "
        "raise ingest.max_extracted_chars",
    }


def test_file_swapped_for_a_link_leading_out_after_discovery_is_not_served(
    app: App, tmp_path: Path
) -> None:
    # The served folder's check ran at discovery; a link swapped in before the read led out.
    docs = tmp_path / "docs"
    write(docs / "a.md", "# A\n\nAlpha backups run nightly.\n")
    swapped = write(docs / "b.md", "# B\n\nBravo text.\n")
    secret = write(tmp_path / "outside" / "secret.md", "# Secret\n\nThe vault code is 1234.\n")

    def swap(step: IngestProgress) -> None:
        if step.source == "a.md":
            swapped.unlink()
            swapped.symlink_to(secret)

    report = app.collection().ingest([docs], progress=swap, confine=docs)
    assert report.added == ["a.md"]
    assert report.failed == [
        (
            "b.md",
            f"{swapped}: leads outside {docs} (through a symlink), so it is not served: "
            "move the file inside or remove the link",
        ),
    ]
    assert all("vault" not in h.text for h in app.collection().search("vault code", top_k=10).hits)
