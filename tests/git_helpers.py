"""Git repositories for tests: made by the real ``git`` command, served by ``git daemon``."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import ROOT, WAIT_S, free_port, spawned, write
from tests.mcp_helpers import wait_until

GIT_DAEMON = "/usr/lib/git-core/git-daemon"  # Debian's git package: the Makefile installs it

# Commits of the same content on any machine: no user's config decides the author or date.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.org",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` in ``cwd``: its output; a failure fails the test, with git's words."""
    assert Path(GIT_DAEMON).is_file(), f"{GIT_DAEMON} is missing: `make test` installs git"
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=_IDENTITY, capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def commit_all(work: Path, message: str) -> str:
    """Commit everything tracked or new in ``work`` (ignored files stay out): the short
    commit id, 12 digits, as sources name it."""
    git(work, "add", "--all")
    git(work, "commit", "--quiet", "-m", message)
    return git(work, "rev-parse", "HEAD")[:12]


def new_repository(work: Path, files: dict[str, str]) -> Path:
    """A repository at ``work`` on branch ``main`` with ``files`` written (not committed)."""
    work.mkdir(parents=True)
    git(work, "init", "--quiet", "--initial-branch=main")
    for name, text in files.items():
        write(work / name, text)
    return work


def published(work: Path, served: Path, name: str = "repo.git") -> Path:
    """A bare clone of ``work`` at ``served/name``, as a host keeps it."""
    served.mkdir(parents=True, exist_ok=True)
    git(served, "clone", "--quiet", "--bare", str(work), name)
    return served / name


def push(work: Path, bare: Path) -> None:
    git(work, "push", "--quiet", "--force", "--tags", str(bare), "main")


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving the repositories under ``base`` on 127.0.0.1: its URL."""
    port = free_port()
    argv = [
        "git", "daemon", "--export-all", f"--base-path={base}", "--reuseaddr",
        "--listen=127.0.0.1", f"--port={port}", "--informative-errors", str(base),
    ]  # fmt: skip
    with spawned(argv, env=_IDENTITY, stderr=subprocess.DEVNULL):
        wait_until(lambda: _answers(port), WAIT_S)
        yield f"git://127.0.0.1:{port}"


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S):
            return True
    except OSError:
        return False


@contextmanager
def git_http(root: Path, user: str, password: str) -> Iterator[str]:
    """``git http-backend`` serving ``root/repos`` over HTTP on 127.0.0.1 to requests with
    ``user`` and ``password`` (tests/git_http_server.py): the base URL of its repositories."""
    port = free_port()
    argv = [sys.executable, "-m", "tests.git_http_server", str(root), str(port), user, password]
    with spawned(argv, cwd=ROOT, stderr=subprocess.DEVNULL):
        wait_until(lambda: _answers(port), WAIT_S)
        yield f"http://127.0.0.1:{port}/git/backend"
