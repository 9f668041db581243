"""The list of files that failed (issue 36, item 3): what a run passes over still gets the
run's tags, a file reached by another spelling is held like any other, and `--failed` lists
the collection an ingest naming none writes to."""

from __future__ import annotations

from pathlib import Path

from knowhub import build_app
from tests.helpers import fast_settings, write

GOOD = '{"backups": "Snapshots run every six hours."}'
BAD = '{"backups": '  # not valid JSON: the loader's error, recorded as the file's


def _reasons(report_failed: list[tuple[str, str]]) -> list[str]:
    return [reason for _, reason in report_failed]


def test_a_file_passed_over_as_failed_still_gets_the_runs_tags(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    page = write(docs / "backups.json", GOOD)
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        assert len(app.collection().ingest([docs]).added) == 1
        write(page, BAD)
        failed = app.collection().ingest([docs], tags={"team": "a"})
        assert "not valid JSON" in _reasons(failed.failed)[0], failed.failed
        [kept] = app.collection().documents()  # the document read before stays, with the new tags
        assert kept.metadata["tags"] == {"team": "a"}
        held = app.collection().ingest([docs], tags={"team": "b"})
        [kept] = app.collection().documents()
        assert kept.metadata["tags"] == {"team": "b"}
        [reason] = _reasons(held.failed)
        assert reason.startswith("skipped as previously failed (") and "touch it" in reason
    finally:
        app.close()


def test_a_file_reached_through_a_link_is_held_once_it_failed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    page = write(docs / "backups.json", GOOD)
    link = tmp_path / "link"
    link.symlink_to(docs)
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        assert len(app.collection().ingest([docs]).added) == 1
        write(page, BAD)
        # the document is known by docs/…, the file by link/…
        first = app.collection().ingest([link])
        assert "not valid JSON" in _reasons(first.failed)[0], first.failed
        [listed] = app.collection().failed_files()
        assert listed.path == str(link / "backups.json")
        [reason] = _reasons(app.collection().ingest([link]).failed)
        assert reason.startswith("skipped as previously failed ("), reason
    finally:
        app.close()


def test_failed_lists_the_collection_an_unnamed_ingest_writes_to(tmp_path: Path) -> None:
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        app.collection("kb").ingest(
            [write(tmp_path / "kb" / "notes.md", "# Notes\n\nSix hours.\n")]
        )
        # `kb` is the only collection, so reads default to it; an ingest naming none still
        # writes to `default`, and its failures are listed there.
        bad = write(tmp_path / "docs" / "broken.json", BAD)
        assert app.collection().ingest([bad.parent]).failed
        assert [f.source for f in app.collection().failed_files()] == ["broken.json"]
        assert app.collection("kb").failed_files() == []
    finally:
        app.close()
