"""Uploads against a real ``knowhub serve http``: a file the disk cannot hold is refused with
507 (nothing of it kept, the server fine), and an upload answered 202 is indexed even when the
server is killed right after (the restart resumes it); ``verify`` reports what is left."""

from __future__ import annotations

import resource
from pathlib import Path

from tests.http_helpers import api_server, build_corpus
from tests.upload_helpers import SCRIPT, content_type, form

# The server may write files up to this size, no larger (RLIMIT_FSIZE: the kernel answers a
# write past it with EFBIG, which Python's default of ignoring SIGXFSZ turns into an OSError):
# a real write failing in the real server, where a full disk cannot be made without root.
FILE_SIZE_LIMIT = 4 << 20


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
