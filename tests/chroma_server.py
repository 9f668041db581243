"""A throwaway Chroma server (``chroma run``, from the chromadb wheel) for the tests.

It listens on a free 127.0.0.1 port with its data in a temporary directory, and gets
SIGTERM when its parent dies, even by SIGKILL. One server serves a whole pytest session;
each test names its collections with a prefix of its own (:func:`unique_prefix`).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from tests.helpers import WAIT_S, SharedServer, die_with, free_port, older_than, stop_process

__all__ = [
    "ChromaServer",
    "shared_server",
    "stop_shared_server",
    "unique_prefix",
    "wait_until_up",
]

_PREFIX = "knowhub-chroma-"
# A directory younger than this may belong to a run that is still starting up.
_STALE_AFTER_S = 120


def _remove_stale_dirs(base: Path) -> None:
    """Delete the data dirs of killed runs (their server died with them)."""
    for folder in base.glob(f"{_PREFIX}*"):
        try:
            pid = int((folder / "server.pid").read_text())
            alive = b"chromadb" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            alive = False
        if not alive and older_than(folder, _STALE_AFTER_S):
            shutil.rmtree(folder, ignore_errors=True)


def wait_until_up(
    process: subprocess.Popen[bytes], url: str, log: Path, timeout: float = WAIT_S
) -> None:
    """Return once the server ``process`` answers at ``url`` (its heartbeat); raise if it
    exits or stays silent past ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not _answers(f"{url}/api/v2/heartbeat", timeout):
        if process.poll() is not None:
            text = log.read_text(errors="replace")
            raise RuntimeError(f"chroma run exited {process.returncode}:\n{text}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"chroma run did not answer within {timeout} s")
        time.sleep(0.05)


def _answers(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def unique_prefix() -> str:
    """A collection-name prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:10]}_"


class ChromaServer:
    """One ``chroma run`` server in a temporary directory, deleted by :meth:`stop`."""

    def __init__(self) -> None:
        base = Path(tempfile.gettempdir())
        _remove_stale_dirs(base)
        self.dir = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=base))
        self.host = "127.0.0.1"
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = WAIT_S) -> ChromaServer:
        log_path = self.dir / "chroma.log"
        # The `chroma` script's own entry point, run by this interpreter (any venv layout).
        command = [
            sys.executable,
            "-c",
            "from chromadb.cli.cli import app; app()",
            "run",
            "--path",
            str(self.dir / "data"),
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        with log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with(signal.SIGTERM)
            )
        (self.dir / "server.pid").write_text(str(self._proc.pid))
        try:
            wait_until_up(self._proc, f"http://{self.host}:{self.port}", log_path, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_process(self._proc)
        shutil.rmtree(self.dir, ignore_errors=True)


_shared = SharedServer(lambda: ChromaServer().start(), ChromaServer.stop)
shared_server = _shared.get  # the process's one server, started on first use
stop_shared_server = _shared.stop
