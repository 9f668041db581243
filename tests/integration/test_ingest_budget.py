"""A file over ``ingest.max_seconds_per_file`` fails alone, naming the setting, and nothing
of it is written: the document indexed from its earlier version stays as it was."""

from __future__ import annotations

from pathlib import Path

from knowhub import build_app
from tests.helpers import fast_settings, write

# Any file takes longer than this to read: the test sees where reading stopped, not how
# long it took.
NO_TIME = 1e-6


def test_a_file_not_read_in_time_fails_and_leaves_its_document_as_it_was(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    guide = write(docs / "guide.md", "# Guide\n\nSnapshots run every six hours.\n")
    app = build_app(fast_settings(tmp_path / "data"))
    assert app.collection().ingest([docs]).added == ["guide.md"]
    app.close()
    write(guide, "# Guide\n\nSnapshots run every hour.\n")
    write(docs / "new.md", "# New\n\nA page never read in time.\n")
    hurried = build_app(
        fast_settings(tmp_path / "data", **{"ingest.max_seconds_per_file": NO_TIME})
    )
    report = hurried.collection().ingest([docs])
    stopped = "(stopped before its cleanup): split the file, or raise the limit (0: none)"
    assert report.failed == [
        (name, f"{docs / name}: not read within ingest.max_seconds_per_file (1e-06 s) {stopped}")
        for name in ("guide.md", "new.md")
    ]
    assert [record.source for record in hurried.collection().documents()] == ["guide.md"]
    assert "six hours" in hurried.collection().search("how often do snapshots run").hits[0].text
    hurried.close()
