"""Uploads against a real ``knowhub serve http``: a file the disk cannot hold is refused with
507 (nothing of it kept, the server fine), and an upload answered 202 is indexed even when the
server is killed right after (the restart resumes it); ``verify`` reports what is left."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import pytest

from knowhub import build_app
from knowhub.ingest.uploads import QUEUE_DIR
from tests.helpers import fast_settings, held_embedder, knowhub, write
from tests.http_helpers import ApiServer, api_server, build_corpus
from tests.mcp_helpers import wait_until
from tests.upload_helpers import SCRIPT, content_type, form

# The server may write files up to this size, no larger (RLIMIT_FSIZE: the kernel answers a
# write past it with EFBIG, which Python's default of ignoring SIGXFSZ turns into an OSError):
# a real write failing in the real server, where a full disk cannot be made without root.
FILE_SIZE_LIMIT = 4 << 20


MANY = 200  # files of one upload


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def test_a_file_the_disk_cannot_hold_is_507_and_nothing_of_it_is_kept(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)
    uploads = data / "uploads" / "default"
    with api_server(cwd=tmp_path, data_dir=data, preexec=_limit_file_size) as server:
        big = form([("小.md", b"# Small\n\nkept\n"), ("大文件.md", b"x" * (FILE_SIZE_LIMIT + 1))])
        refused = server.post("/ui/upload", content=big, headers={**SCRIPT, **content_type()})
        assert refused.status_code == 507, refused.text
        assert "大文件.md" in refused.text and "server.data_dir" in refused.text
        assert str(data) not in refused.text  # the server's paths stay in its log
        assert not uploads.exists() or not list(uploads.iterdir())
        small = form([("after.md", b"# After\n\nThe disk has room again.\n")])
        accepted = server.post("/ui/upload", content=small, headers={**SCRIPT, **content_type()})
        assert accepted.status_code == 202, accepted.text
    assert "ulimit -f" in server.logs() or "File too large" in server.logs()


def _documents(server: ApiServer) -> set[str]:
    listed = server.get("/api/documents", params={"collection": "default"})
    return {d["source"] for d in listed.json()["documents"]} if listed.status_code == 200 else set()


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_an_upload_answered_202_is_indexed_after_the_server_is_stopped_at_once(
    tmp_path: Path, stop: signal.Signals
) -> None:
    data = tmp_path / "data"
    # Its ingest holds at its second passage until the gate opens: still under way when the
    # signal comes, however fast the machine.
    env = held_embedder(tmp_path)
    names = [f"note-{n:03}.md" for n in range(MANY)]
    files = [
        (name, f"# Note {n}\n\nThe kiln fires at {n} degrees.\n".encode())
        for n, name in enumerate(names)
    ]
    with api_server(cwd=tmp_path, data_dir=data, env=env) as server:
        accepted = server.post(
            "/ui/upload", content=form(files), headers={**SCRIPT, **content_type()}
        )
        assert accepted.status_code == 202, accepted.text
        server.process.send_signal(stop)
        server.process.wait(timeout=60)
    queued = list((data / QUEUE_DIR).glob("*.json"))
    assert len(queued) == 1  # the job, queued on disk before the 202, still to finish
    Path(env["GATE_FILE"]).touch()
    with api_server(cwd=tmp_path, data_dir=data, env=env) as server:
        wait_until(lambda: _documents(server) == set(names), timeout=120, interval=0.2)
        wait_until(lambda: not list((data / QUEUE_DIR).glob("*.json")), timeout=60)
    assert "resuming upload" in server.logs()
    checked = knowhub("--data-dir", str(data), "verify", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_verify_reports_uploaded_files_no_document_records_and_fix_leaves_them(
    tmp_path: Path,
) -> None:
    data = build_corpus(tmp_path)
    uploads = data / "uploads" / "default"
    stray = write(uploads / "报销制度.md", "# 报销\n\n差旅报销需要在三十天内提交发票。\n")
    part = write(uploads / ".upload-0123456789abcdef.part", "# Half a fi")
    faq = write(uploads / "faq" / "vpn.csv", "question,answer\nVPN?,On the intranet.\n")
    checked = knowhub("--data-dir", str(data), "verify", cwd=tmp_path)
    assert checked.returncode != 0
    report = checked.stdout
    assert f"default: 报销制度.md: uploaded file {stray} is no document" in report
    assert f"`knowhub ingest {stray} --collection default --tag …`" in report
    assert f"default: {part.name}: {part} is part of a file an upload" in report
    assert "vpn.csv" not in report  # FAQ files are not documents
    fixed = knowhub("--data-dir", str(data), "verify", "--fix", cwd=tmp_path)
    # Whose it is, and so its tags, are unknown: reported still, never ingested untagged.
    assert fixed.returncode != 0 and "problem: default: 报销制度.md" in fixed.stdout
    assert not part.exists() and stray.is_file() and faq.is_file()
    app = build_app(fast_settings(data))
    try:
        assert "报销制度.md" not in {d.source for d in app.collection("default").documents()}
    finally:
        app.close()
