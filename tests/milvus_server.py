"""A Milvus server for the tests: ``python -m milvus_lite server`` (from the milvus-lite wheel)
on a free 127.0.0.1 port, its data in a temporary directory, SIGTERM when its parent dies.

``KNOWHUB_TEST_MILVUS_URI`` (with ``KNOWHUB_TEST_MILVUS_TOKEN`` when it needs one) names a
real Milvus to use instead: milvus-lite is a Python re-implementation, so only a real one
tests the server's engine (its whitespace analyzer, HNSW). One server serves a whole pytest
session; every catalog names its Milvus collections with an id of its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from knowhub import Settings, load_settings
from tests.helpers import WAIT_S, SharedServer, die_with, free_port, stop_process

__all__ = ["MilvusServer", "shared_server", "stop_shared_server"]

URI_ENV = "KNOWHUB_TEST_MILVUS_URI"
TOKEN_ENV = "KNOWHUB_TEST_MILVUS_TOKEN"


class MilvusServer:
    """A milvus-lite server in a temporary directory (deleted by :meth:`stop`), or the real
    Milvus that ``KNOWHUB_TEST_MILVUS_URI`` names (left alone)."""

    def __init__(self) -> None:
        self.uri = os.environ.get(URI_ENV, "")
        self.token = os.environ.get(TOKEN_ENV, "")
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None

    def start(self, timeout: float = WAIT_S, attempts: int = 3) -> MilvusServer:
        if self.uri:
            return self
        # milvus-lite's gRPC engine now and then dies as it starts ("epoll_wait error: Bad
        # file descriptor", seen under pytest-xdist): a server that exits before it
        # listens is started again, on another port, before the tests hear of it.
        for attempt in range(1, attempts + 1):
            try:
                return self._start(timeout)
            except RuntimeError:
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> MilvusServer:
        self._dir = Path(tempfile.mkdtemp(prefix="knowhub-milvus-"))
        port = free_port()
        log = self._dir / "server.log"
        with log.open("ab") as out:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "milvus_lite",
                    "server",
                    "--data-dir",
                    str(self._dir / "data"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with(signal.SIGTERM),
            )
        deadline = time.monotonic() + timeout
        while not _listens(port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(errors="replace")
                self.stop()
                raise RuntimeError(f"milvus-lite server did not start:\n{text}")
            time.sleep(0.05)
        self.uri = f"http://127.0.0.1:{port}"
        return self

    def settings(self, data_dir: Path, **overrides: object) -> Settings:
        """Fast test settings (hashing embedder) of a milvus store on this server."""
        values: dict[str, object] = {
            "data_dir": data_dir,
            "embedder.provider": "hashing",
            "store.provider": "milvus",
            "store.milvus.uri": self.uri,
            "store.milvus.token_env": TOKEN_ENV if self.token else "",
            **overrides,
        }
        env = {TOKEN_ENV: self.token} if self.token else {}
        return load_settings(env=env, overrides=values, cwd=data_dir.parent)

    def stop(self) -> None:
        stop_process(self._proc)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def _listens(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


_shared = SharedServer(lambda: MilvusServer().start(), MilvusServer.stop)
shared_server = _shared.get  # the process's one server, started on first use
stop_shared_server = _shared.stop
