"""An ingest run's report: every file that did not go in, and why, in one place for the
console's jobs, its re-ingest and verify's repairs."""

from __future__ import annotations

from knowhub.ingest.report import IngestReport


def test_the_files_not_ingested_are_the_failed_and_the_skipped_with_their_reasons() -> None:
    report = IngestReport(
        "kb",
        added=["a.md"],
        failed=[("b.pdf", "not a PDF")],
        skipped=[("c.gif", "a type knowhub does not read")],
    )
    assert report.not_ingested() == {
        "b.pdf": "not a PDF",
        "c.gif": "skipped: a type knowhub does not read",
    }
