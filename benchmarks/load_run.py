"""Start both servers on a copy of the example corpus and load them: the run recorded in
docs/benchmarks.md, from a fresh clone in one command.

    python benchmarks/load_run.py --clients 100 --duration 60

1. copy ``examples/docs`` to a work folder (the writer edits a file there, not the repo);
2. ``knowhub serve mcp --transport http --docs DOCS`` (local mode: indexes the folder) and,
   once it has, ``knowhub serve http`` on the same data dir, hashing embedder by default;
3. ``knowhub bench load`` with the writer on, against both; its report goes to
   ``benchmarks/results/load-<clients>c-<duration>s/report.{json,md}``;
4. stop both servers; the exit status is the bench's (1: goal not met).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--embedder", default="hashing", help="embedder.provider of the servers")
    parser.add_argument("--no-writer", action="store_true")
    parser.add_argument("--out", type=Path, help="report folder (default: benchmarks/results/…)")
    args = parser.parse_args()
    out = args.out or RESULTS / f"load-{args.clients}c-{args.duration:g}s"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env |= {"KNOWHUB_EMBEDDER__PROVIDER": args.embedder, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory(prefix="knowhub-load-") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "examples" / "docs", work / "docs")
        with ExitStack() as servers:
            mcp = servers.enter_context(
                _server(
                    work, env, "serve", "mcp", "--transport", "http", "--docs", str(work / "docs")
                )
            )
            _wait(lambda: not httpx.get(mcp + "/health", timeout=5).json().get("indexing"))
            api = servers.enter_context(_server(work, env, "serve", "http"))
            writer = [] if args.no_writer else ["--writer", str(work / "docs" / "load-note.md")]
            bench = [
                sys.executable,
                "-m",
                "knowhub",
                "--data-dir",
                str(work / "data"),
                "bench",
                "load",
                "--url",
                api,
                "--mcp-url",
                mcp + "/mcp",
                "--clients",
                str(args.clients),
                "--duration",
                str(args.duration),
                *writer,
                "--out",
                str(out),
            ]
            status = subprocess.run(bench, env=env, cwd=work, check=False).returncode
        if out.is_dir():  # the servers' logs beside the report (they stopped: logs complete)
            for log in work.glob("*.log"):
                shutil.copy(log, out / f"server-{log.name}")
    sys.exit(status)


@contextmanager
def _server(work: Path, env: dict[str, str], *command: str) -> Iterator[str]:
    """``knowhub --data-dir WORK/data COMMAND --port P`` until the block ends; its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = work / f"{command[1]}.log"
    argv = [
        sys.executable,
        "-m",
        "knowhub",
        "--data-dir",
        str(work / "data"),
        *command,
        "--port",
        str(port),
        "--log-file",
        str(log),
    ]
    process = subprocess.Popen(argv, env=env, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: httpx.get(url + "/health", timeout=5).status_code == 200, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait(ready: Callable[[], bool], process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            sys.exit(f"server exited with status {process.returncode}")
        try:
            if ready():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    sys.exit("server not ready after 300 s")


if __name__ == "__main__":
    main()
