"""Raw JSON-RPC lines over a real ``knowhub serve mcp`` process's stdin and stdout.

For what the SDK's client never sends: broken frames, batches, odd ids. Every line the
server writes is kept (parsed) in arrival order; :meth:`RawStdio.wait_for` waits on a
condition for the ones a test expects, so nothing sleeps. Leaving the ``with`` block
ends the process (killed if it does not exit) and closes its pipes, failed test or not.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from tests.helpers import cli_env

__all__ = ["PROTOCOL", "RawStdio", "answers_to", "request"]

PROTOCOL = "2025-06-18"
SAFETY_S = 120.0  # a bound on waiting for a frame, never the assertion itself


def request(ident: object, method: str, params: dict[str, Any] | None = None) -> str:
    """One request line (``ensure_ascii``: a lone surrogate stays the escape a client wrote)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


class RawStdio:
    """``python -m knowhub --data-dir ROOT/data serve mcp --docs ROOT/docs EXTRA``."""

    def __init__(self, root: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "-m", "knowhub", "--data-dir", str(root / "data")]
        command += ["serve", "mcp", "--docs", str(root / "docs"), *extra]
        self.stderr_path = root / "raw-stdio.log"
        self._stderr = self.stderr_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=cli_env(env),
            cwd=root,
        )
        self.received: list[Any] = []  # every frame written, parsed, in order
        self.raw: list[bytes] = []
        self._seen = threading.Condition()
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="raw-stdio", daemon=True)
        self._reader.start()

    def __enter__(self) -> RawStdio:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _read(self) -> None:
        stdout: IO[bytes] = self.process.stdout  # type: ignore[assignment]
        for line in stdout:
            with self._seen:
                self.raw.append(line)
                try:
                    self.received.append(json.loads(line))
                except ValueError:
                    self.received.append(None)  # not JSON: the tests fail on it
                self._seen.notify_all()
        with self._seen:
            self._closed = True
            self._seen.notify_all()

    def send(self, line: str | bytes) -> None:
        data = line.encode() if isinstance(line, str) else line
        stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        stdin.write(data + b"\n")
        stdin.flush()

    def wait_for(self, found: Callable[[list[Any]], Any], what: str) -> Any:
        """``found(received)`` once it is truthy; fails if the server closes stdout first."""
        with self._seen:
            while not (result := found(self.received)):
                if self._closed:
                    raise AssertionError(f"stdout closed before {what}: {self.received[-5:]}")
                if not self._seen.wait(SAFETY_S):
                    raise AssertionError(f"no {what} within {SAFETY_S} s: {self.received[-5:]}")
            return result

    def answer(self, ident: object) -> dict[str, Any]:
        """The answer to request ``ident`` (server notifications and requests skipped)."""

        def find(received: list[Any]) -> dict[str, Any] | None:
            return next(iter(answers_to(received, ident)), None)

        found: dict[str, Any] = self.wait_for(find, f"answer to id {ident!r}")
        return found

    def initialize(self) -> dict[str, Any]:
        hello = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "raw-stdio", "version": "1"},
        }
        self.send(request("init", "initialize", hello))
        result = self.answer("init")
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return result

    def close(self) -> int:
        """Close stdin, wait for the exit (kill past the safety bound), close the pipes;
        the exit status."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):  # the server is gone already
                self.process.stdin.close()
        try:
            self.process.wait(timeout=SAFETY_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=SAFETY_S)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()
        return self.process.returncode

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def answers_to(received: list[Any], ident: object) -> Iterator[dict[str, Any]]:
    """The answers among ``received`` (a batch's answer counts member by member) to ``ident``."""
    for frame in received:
        for message in frame if isinstance(frame, list) else [frame]:
            if (
                isinstance(message, dict)
                and "method" not in message
                and "id" in message
                and _same(message["id"], ident)
            ):
                yield message


def _same(a: object, b: object) -> bool:
    """JSON ids compare by type too: the answer to id 1 is not the answer to id True or "1"."""
    return type(a) is type(b) and a == b
