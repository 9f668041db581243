"""Helpers shared by tests: fast deterministic settings and file writing."""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from knowhub import Settings, load_settings

S = TypeVar("S")
_PR_SET_PDEATHSIG = 1

ROOT = Path(__file__).resolve().parents[1]


def fast_settings(data_dir: Path, **overrides: object) -> Settings:
    """Settings with the hashing embedder (instant, deterministic) and no config file."""
    values: dict[str, object] = {
        "data_dir": data_dir,
        "embedder.provider": "hashing",
        "embedder.workers": 1,
    }
    values.update(overrides)
    return load_settings(env={}, overrides=values, cwd=data_dir.parent)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# The hashing embedder keeps subprocess tests fast; KNOWHUB_* from the caller's shell never leak in.
FAST_ENV = {"KNOWHUB_EMBEDDER__PROVIDER": "hashing", "KNOWHUB_EMBEDDER__WORKERS": "1"}


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    return {**inherited, **FAST_ENV, **(extra or {})}


def knowhub(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m knowhub ARGS`` as a user would, output captured (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "knowhub", *args],
        cwd=cwd, env=cli_env(env), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def knowhub_on_terminal(*args: str, cwd: Path) -> tuple[int | None, str]:
    """Run ``python -m knowhub ARGS`` on a pseudo-terminal; return exit status and output."""
    import pexpect

    child = pexpect.spawn(
        sys.executable, ["-m", "knowhub", *args],
        cwd=str(cwd), env=cli_env(), encoding="utf-8", timeout=120,
    )  # fmt: skip
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before or ""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class SharedServer(Generic[S]):
    """One server per test process, started by its first user and stopped at exit (or by
    the session fixture that calls :meth:`stop`)."""

    def __init__(self, start: Callable[[], S], stop: Callable[[S], None]) -> None:
        self._start, self._stop = start, stop
        self._server: S | None = None
        self._lock = threading.Lock()

    def get(self) -> S:
        with self._lock:
            if self._server is None:
                server = self._start()
                atexit.register(self._stop, server)
                self._server = server
            return self._server

    def stop(self) -> None:
        with self._lock:
            if self._server is not None:
                self._stop(self._server)
                self._server = None


def die_with(sig: int) -> Callable[[], None]:
    """A ``preexec_fn`` that has the child sent ``sig`` when the test process dies, even by
    SIGKILL (it runs in the child, after any uid switch, which would clear it)."""

    def arm() -> None:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)

    return arm


def stop_process(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    """Send ``sig``, give the process 15 s to exit, then kill it."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
