"""``verify`` and ``verify --fix`` over the console's uploads folder: an upload given up after
being cut short too often is ingested by the repair with its own tags, as its uploader (an
upload's tags carry its data scope: without them the document would be open to every tenant);
a file no record owns is reported with the fix, never ingested untagged."""

from __future__ import annotations

from pathlib import Path

from knowhub import build_app
from knowhub.ingest.uploads import QUEUE_DIR, Queue, QueuedFile, QueuedUpload
from knowhub.interfaces.http.console.jobs import MAX_ATTEMPTS, Ingest, JobBook
from knowhub.scope import Scope
from tests.helpers import fast_settings, write

ACME, GLOBEX = Scope.of(tenants=["acme"]), Scope.of(tenants=["globex"])


def _given_up(data: Path) -> Path:
    """An acme writer's upload, cut short too often: the next start gives it up."""
    path = write(data / "uploads" / "kb" / "plan.md", "# Plan\n\nThe acme kiln plan.\n")
    files = [QueuedFile("plan.md", "uploads/kb/plan.md")]
    upload = QueuedUpload("j1", "kb", {"tenant": "acme"}, files, MAX_ATTEMPTS, ACME)
    Queue(data).add(upload).release()

    def never(upload: QueuedUpload, paths: list[Path]) -> Ingest:
        raise AssertionError("not resumed again")

    assert JobBook(Queue(data)).resume(never) == []  # the server's start
    return path


def test_fix_ingests_a_given_up_upload_with_its_tags_as_its_uploader(tmp_path: Path) -> None:
    data = tmp_path / "data"
    app = build_app(fast_settings(data))
    try:
        app.collection("kb").ingest([write(tmp_path / "docs" / "a.md", "# A\n\nShared text.\n")])
        path = _given_up(data)
        found = app.verify("kb")
        assert [(p.kind, p.subject) for p in found.problems] == [("given_up_upload", "plan.md")]
        assert "j1" in found.problems[0].detail and "--fix" in found.problems[0].detail
        fixed = app.verify("kb", fix=True)
        assert fixed.ok, fixed.to_dict()
        assert fixed.fixed == [
            "kb: plan.md: ingested (given-up upload j1, with its tags)",
            "kb: j1.json: deleted (its upload's files are in)",
        ]
        (record,) = [r for r in app.collection("kb").documents() if r.source == "plan.md"]
        assert record.metadata["tags"] == {"tenant": "acme"}
        assert "plan.md" in {r.source for r in app.scoped(ACME).collection("kb").documents()}
        assert "plan.md" not in {r.source for r in app.scoped(GLOBEX).collection("kb").documents()}
        assert path.is_file() and not list((data / QUEUE_DIR).glob("*.json"))
    finally:
        app.close()


def test_fix_leaves_an_uploaded_file_no_record_owns_reported_not_ingested(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    app = build_app(fast_settings(data))
    try:
        app.collection("kb").ingest([write(tmp_path / "docs" / "a.md", "# A\n\nShared text.\n")])
        stray = write(data / "uploads" / "kb" / "stray.md", "# Stray\n\nWhose is this?\n")
        fixed = app.verify("kb", fix=True)
        assert [(p.kind, p.subject) for p in fixed.problems] == [("unindexed_upload", "stray.md")]
        detail = fixed.problems[0].detail
        assert f"knowhub ingest {stray} --collection kb --tag" in detail and "delete" in detail
        assert "stray.md" not in {r.source for r in app.collection("kb").documents()}
        assert stray.is_file()
    finally:
        app.close()
