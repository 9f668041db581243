"""The console's upload pieces: file names made safe, a multipart body parsed as it streams
(the size limit applied while it arrives), the upload settings, a job's per-file states."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from knowhub import build_app
from knowhub.caller import Caller
from knowhub.config.server import UPLOAD_CONTAINERS, UPLOAD_EXTENSIONS, ServerSettings
from knowhub.errors import KnowhubError, QueryError
from knowhub.ingest.loaders import SUPPORTED_EXTENSIONS, is_container
from knowhub.ingest.pipeline import IngestReport
from knowhub.ingest.progress import IngestProgress, Progress
from knowhub.ingest.uploads import Leftovers, leftovers, uploads_folder
from knowhub.interfaces.http.console.jobs import MAX_PENDING, RETRY_AFTER_S, FileState, JobBook
from knowhub.interfaces.http.console.uploads import (
    MAX_NAME_CHARS,
    Upload,
    UploadLimits,
    receive,
    safe_name,
)
from knowhub.interfaces.http.limits import ServerBusyError
from tests.helpers import WAIT_S, fast_settings

BOUNDARY = "----knowhubtest"


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("notes.md", "notes.md"),
        ("../../etc/passwd.txt", "passwd.txt"),
        ("folder\\sub\\report.pdf", "report.pdf"),
        ("..hidden.md", "hidden.md"),
        ("a..b.md", "a_b.md"),
        ("bell\x07\x00name.md", "bell__name.md"),
        ("отчёт 报告.docx", "отчёт 报告.docx"),
        ("..", "upload"),
        ("", "upload"),
    ],
)
def test_a_sent_name_is_made_safe(sent: str, kept: str) -> None:
    assert safe_name(sent) == kept


def test_a_long_name_is_capped_with_its_extension_kept() -> None:
    name = safe_name("x" * 500 + ".docx")
    assert len(name) == MAX_NAME_CHARS
    assert name.endswith(".docx")


def test_the_default_extensions_are_what_the_loaders_read() -> None:
    assert set(UPLOAD_EXTENSIONS) == SUPPORTED_EXTENSIONS
    assert all(is_container(f"x{suffix}") for suffix in UPLOAD_CONTAINERS)
    assert ServerSettings(upload_extensions=["PDF", ".Md"]).upload_extensions == [".pdf", ".md"]
    assert ServerSettings().max_upload_bytes == 50_000_000


def _body(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data
        out += b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


async def _chunks(body: bytes, size: int, seen: list[int]) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        seen.append(start)
        yield body[start : start + size]


def _receive(tmp_path: Path, body: bytes, limit: int, seen: list[int] | None = None) -> Upload:
    sent = asyncio.run(
        receive(
            f"multipart/form-data; boundary={BOUNDARY}",
            _chunks(body, 1000, [] if seen is None else seen),
            lambda fields: tmp_path / fields["collection"],
            UploadLimits(limit, 1 << 30, [".md", ".pdf"]),
        )
    )
    sent.release()  # no job record to wait for here
    return sent


def test_files_stream_to_the_collection_folder_and_a_clash_gets_a_suffix(tmp_path: Path) -> None:
    body = _body(
        [
            ("collection", None, b"handbook"),
            ("tags", None, b"team=ops"),
            ("files", "a.md", b"# A\n\nfirst"),
            ("files", "sub/a.md", b"# A\n\nsecond"),
            ("files", "", b""),  # an empty file input
        ]
    )
    sent = _receive(tmp_path, body, 10_000)
    assert sent.fields == {"collection": "handbook", "tags": "team=ops"}
    assert [(r.sent_as, r.path.name) for r in sent.received] == [
        ("a.md", "a.md"),
        ("sub/a.md", "a-1.md"),
    ]
    assert (tmp_path / "handbook" / "a-1.md").read_bytes() == b"# A\n\nsecond"
    assert sent.rejected == []


def test_an_oversized_file_is_cut_off_while_it_streams(tmp_path: Path) -> None:
    big = b"x" * 50_000
    body = _body([("collection", None, b"c"), ("files", "big.md", big), ("files", "ok.md", b"ok")])
    sent = _receive(tmp_path, body, 5_000)
    assert [r.sent_as for r in sent.rejected] == ["big.md"]
    assert "server.max_upload_bytes" in sent.rejected[0].reason
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["ok.md"]


def test_an_unsupported_or_empty_file_is_refused_and_not_stored(tmp_path: Path) -> None:
    body = _body([("collection", None, b"c"), ("files", "tool.exe", b"MZ"), ("files", "e.md", b"")])
    sent = _receive(tmp_path, body, 5_000)
    assert [(r.sent_as, r.reason.split(":")[0]) for r in sent.rejected] == [
        ("tool.exe", ".exe files are not accepted"),
        ("e.md", "empty file"),
    ]
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())


def test_a_body_that_is_not_multipart_is_refused(tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="multipart/form-data"):
        limits = UploadLimits(1, 1024, [])
        asyncio.run(receive("application/json", _chunks(b"{}", 10, []), lambda f: tmp_path, limits))


def test_a_job_moves_each_file_to_done_or_failed(tmp_path: Path) -> None:
    folder = tmp_path / "uploads"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe kiln fires at 1200 degrees.\n")
    (folder / "bad.pdf").write_text("not a pdf")
    app = build_app(fast_settings(tmp_path / "data"))
    try:
        files = [FileState("good.md", "good.md"), FileState("bad.pdf", "bad.pdf")]
        paths = [folder / "good.md", folder / "bad.pdf"]
        seen: list[str] = []

        def ingest(progress: Progress) -> IngestReport:
            def watch(step: IngestProgress) -> None:
                seen.append(step.event)
                progress(step)

            return app.collection("default").ingest(paths, {"team": "ops"}, progress=watch)

        stored = dict(zip(["good.md", "bad.pdf"], paths, strict=True))
        job = JobBook().start(Caller("full"), "default", files, [], ingest, stored)
        assert job.done.wait(60)
        view = job.view()
        assert view["finished"]
        assert [(f["name"], f["state"]) for f in view["files"]] == [
            ("good.md", "done"),
            ("bad.pdf", "failed"),
        ]
        assert view["files"][1]["reason"]
        assert "started" in seen and "file_done" in seen
        assert app.collection("default").documents()[0].metadata["tags"] == {"team": "ops"}
        # No document points to the file that failed: it is not kept.
        assert (folder / "good.md").is_file() and not (folder / "bad.pdf").exists()
    finally:
        app.close()


def _scan_step(event: str, page: int = 0, chunks: int = 0) -> IngestProgress:
    return IngestProgress(
        event,  # type: ignore[arg-type]
        "scan.pdf",
        files_done=0,
        files_total=1,
        files_chunked=int(event == "chunked"),
        chunks_done=0,
        chunks_total=chunks,
        page=page,
        pages=4,
    )


def test_a_scans_pages_move_its_bar_and_say_which_page_is_read() -> None:
    views: list[tuple[str, str, float]] = []
    jobs: list[Any] = []

    def ingest(progress: Progress) -> IngestReport:
        progress(_scan_step("started"))
        for event, page in [("page_read", 1), ("page_read", 2), ("page_read", 4), ("chunked", 0)]:
            progress(_scan_step(event, page, chunks=4 if event == "chunked" else 0))
            (f,) = jobs[0].view()["files"]
            views.append((f["state"], f["reason"], f["fraction"]))
        return IngestReport("default", added=["scan.pdf"])

    start = threading.Event()

    def gated(progress: Progress) -> IngestReport:
        start.wait(WAIT_S)
        return ingest(progress)

    files = [FileState("scan.pdf", "scan.pdf")]
    jobs.append(JobBook().start(Caller("full"), "default", files, [], gated, {}))
    start.set()
    assert jobs[0].done.wait(WAIT_S) and not jobs[0].error
    assert views == [
        ("reading", "OCR page 1/4", 0.2),
        ("reading", "OCR page 2/4", 0.3),
        ("reading", "OCR page 4/4", 0.5),
        ("embedding", "", 0.5),  # not back to 0.1 as its chunks start
    ]


def _never(progress: Progress) -> IngestReport:
    raise AssertionError("every file was refused: nothing to ingest")


def test_a_job_is_shown_only_to_its_owner_not_to_another_of_its_name() -> None:
    book, full = JobBook(), Caller("full")
    job = book.start(full, "default", [], [FileState("x.exe", "", "failed", "no")], _never)
    assert book.get(job.id, full) is job
    assert book.get(job.id, Caller("reader")) is None
    assert book.get(job.id, Caller("full")) is None  # another token of that name
    assert job.finished and job.view()["files"][0]["state"] == "failed"


def test_uploads_past_the_pending_limit_are_refused_and_not_kept(tmp_path: Path) -> None:
    book, release, full = JobBook(), threading.Event(), Caller("full")

    def slow(progress: Progress) -> IngestReport:
        release.wait(WAIT_S)
        raise KnowhubError("stopped by the test")

    try:
        for n in range(MAX_PENDING):
            book.start(full, "default", [FileState(f"{n}.md", f"{n}.md")], [], slow)
        extra = tmp_path / "extra.md"
        extra.write_text("# Extra\n")
        with pytest.raises(ServerBusyError, match="try again later") as refused:
            book.start(
                full,
                "default",
                [FileState("extra.md", "extra.md")],
                [],
                slow,
                {"extra.md": extra},
            )
        assert not extra.exists()
        assert refused.value.retry_after == RETRY_AFTER_S
    finally:
        release.set()


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "cut-short"])
def test_an_upload_s_files_are_no_leftovers_until_its_record_is_written(
    tmp_path: Path, whole: bool
) -> None:
    """verify (``leftovers``) must not take a file of an upload still arriving for one a stop
    left: ``--fix`` would ingest it, and the upload, ending in a 413 or a disconnect, delete it."""
    data = tmp_path / "data"
    folder = uploads_folder(data, "default")
    first, second = b"# First\n\n" + b"a" * 2000, b"# Second\n\n" + b"b" * 2000
    body = _body(
        [("collection", None, b"default"), ("files", "1.md", first), ("files", "2.md", second)]
    )
    cut = body.index(b"b" * 2000) + 1000
    seen: list[Leftovers] = []

    async def chunks() -> AsyncIterator[bytes]:
        yield body[:cut]  # the first file whole, the second half-way
        seen.append(leftovers(data, "default", set()))
        yield body[cut:] if whole else b""

    async def upload() -> Upload:
        limits = UploadLimits(10_000, 1 << 20, [".md"])
        return await receive(
            f"multipart/form-data; boundary={BOUNDARY}", chunks(), lambda f: folder, limits
        )

    if not whole:
        with pytest.raises(QueryError, match="cut short"):
            asyncio.run(upload())
        assert [(s.unindexed, s.partial) for s in seen] == [([], [])]
        assert not list(folder.iterdir())
        return
    sent = asyncio.run(upload())
    seen.append(leftovers(data, "default", set()))  # whole, its job's record not yet written
    assert [(s.unindexed, s.partial) for s in seen] == [([], []), ([], [])]
    sent.release()  # the record is written (or the upload refused): no longer held
    assert [p.name for p in leftovers(data, "default", set()).unindexed] == ["1.md", "2.md"]
