"""Cold start: wall seconds of fresh processes, median of ``--runs``.

    python benchmarks/cold_start.py --data-dir DATA --docs DOCS [--query TEXT] [--runs 5]

Three measurements, each a new Python process started from nothing (no server running):

- ``knowhub --version``: the CLI's imports alone;
- ``knowhub --data-dir DATA search QUERY``: imports, opening the store, loading the
  embedder and the collection's dense index, one query, exit;
- ``knowhub --data-dir DATA serve mcp --docs DOCS`` (stdio): from the start of the process
  to the answer of ``tools/list``, after ``initialize`` and ``notifications/initialized``,
  written as JSON-RPC lines on its stdin the way an MCP client does. The process is then
  closed (its stdin ends), outside the timing.

``DATA`` should already hold ``DOCS`` ingested (``knowhub --data-dir DATA ingest DOCS``), so
the server's first sync finds nothing to do. ``-X importtime`` is not used here: it slows
every import; run it by hand to see where the time goes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

KNOWHUB = [sys.executable, "-m", "knowhub"]
TIMEOUT_S = 120.0


def run_once(args: list[str]) -> float:
    """Wall seconds of ``knowhub ARGS`` to its exit; it must succeed."""
    start = time.perf_counter()
    subprocess.run([*KNOWHUB, *args], check=True, capture_output=True, timeout=TIMEOUT_S)
    return time.perf_counter() - start


def _request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return (json.dumps(message) + "\n").encode()


def _answer(process: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    """The response to ``request_id`` (notifications and log lines the server sends first
    are skipped)."""
    assert process.stdout is not None
    for line in process.stdout:
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise SystemExit(f"request {request_id} failed: {message['error']}")
            return message
    raise SystemExit(f"the server closed stdout before answering request {request_id}")


def mcp_tools_list(data_dir: Path, docs: Path) -> float:
    """Wall seconds from starting ``serve mcp`` (stdio) to its ``tools/list`` answer."""
    args = ["--data-dir", str(data_dir), "serve", "mcp", "--docs", str(docs)]
    start = time.perf_counter()
    process = subprocess.Popen(
        [*KNOWHUB, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    try:
        client = {"name": "cold-start", "version": "0"}
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
        process.stdin.write(_request(1, "initialize", init))
        process.stdin.flush()
        _answer(process, 1)
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        process.stdin.write((json.dumps(note) + "\n").encode() + _request(2, "tools/list", {}))
        process.stdin.flush()
        tools = _answer(process, 2)["result"]["tools"]
        elapsed = time.perf_counter() - start
        if not tools:
            raise SystemExit("tools/list answered no tools")
        return elapsed
    finally:
        process.stdin.close()
        process.wait(timeout=TIMEOUT_S)


def median_of(runs: int, measure: Callable[[], float]) -> dict[str, float]:
    """Median, minimum and maximum wall seconds of ``runs`` calls of ``measure()``."""
    times = [measure() for _ in range(runs)]
    return {
        "median_s": round(statistics.median(times), 3),
        "min_s": round(min(times), 3),
        "max_s": round(max(times), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="an ingested data dir")
    parser.add_argument("--docs", type=Path, required=True, help="the folder ingested there")
    parser.add_argument("--query", default="how are backups taken?", help="the search query")
    parser.add_argument("--collection", help="collection searched (default: the default one)")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement")
    args = parser.parse_args()
    search = ["--data-dir", str(args.data_dir), "search", args.query]
    if args.collection:
        search += ["--collection", args.collection]
    results = {
        "version": median_of(args.runs, lambda: run_once(["--version"])),
        "search": median_of(args.runs, lambda: run_once(search)),
        "mcp_tools_list": median_of(args.runs, lambda: mcp_tools_list(args.data_dir, args.docs)),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
