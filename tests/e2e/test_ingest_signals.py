"""Stopping a real `knowhub ingest` (or server) that embeds in worker processes.

Ctrl-C stops it at once and says what was kept; SIGTERM and ``kill -9`` of the parent
leave no worker process behind; a server's shutdown does not wait for an ingest. The
embedder is a plugin, installed the way a user's would be (an entry point on the path),
that sleeps per batch and fans out to worker processes, as costly models do. "At once" is
shown by ordering, not by a clock: the batch in flight never ends by itself (it lasts
NEVER_S), so a process that ends did not wait for it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tests.helpers import (
    NEVER_S,
    WAIT_S,
    cli_env,
    die_with,
    embedder_plugin,
    knowhub,
    on_terminal,
    sigint_default,
    spawned,
    write,
)
from tests.integration.test_mcp_shared import shared_server, text_of, token_env
from tests.mcp_helpers import wait_until

WORKERS = 2
PLUGIN = '''
import os
import time

from knowhub.providers.embedders.hashing import HashingEmbedder


class SlowEmbedder(HashingEmbedder):
    """The hashing embedder, slowed down like a real model, run in worker processes."""

    def __init__(self) -> None:
        super().__init__(64)
        self.model_id = "slow-test-64"
        self.parallel = True
        self.batch_size = 64

    def _encode(self, texts, is_query):
        if not is_query:
            stall = os.environ.get("SLOW_EMBEDDER_STALL")
            if stall and any(stall in text for text in texts):
                time.sleep(float(os.environ["SLOW_EMBEDDER_NEVER_S"]))
            time.sleep(float(os.environ["SLOW_EMBEDDER_SECONDS"]))
        return super()._encode(texts, is_query)


def create(settings):
    return SlowEmbedder()
'''


def slow_env(tmp_path: Path, seconds: float = 0.2, stall: str = "") -> dict[str, str]:
    """The environment of a knowhub process whose embedder is the slow plugin: ``seconds``
    a batch, and a batch with a text holding ``stall`` never ends (it lasts NEVER_S)."""
    path = embedder_plugin(tmp_path / "plugin", "slow", PLUGIN)
    return cli_env(
        {
            "PYTHONPATH": path,
            "SLOW_EMBEDDER_SECONDS": str(seconds),
            "SLOW_EMBEDDER_STALL": stall,
            "SLOW_EMBEDDER_NEVER_S": str(NEVER_S),
            "KNOWHUB_EMBEDDER__PROVIDER": "slow",
            "KNOWHUB_EMBEDDER__WORKERS": str(WORKERS),
        }
    )


def write_docs(folder: Path, count: int) -> Path:
    for index in range(count):
        write(folder / f"doc{index:03d}.md", f"# Doc {index}\n\nParagraph {index} of words.\n")
    return folder


def _stat_fields(pid: int) -> list[str]:
    # After the ")" closing the command name: state, ppid, …
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def workers_of(parent: int) -> set[int]:
    """Live multiprocessing-spawned children of ``parent``, found in /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(entry.name))[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if ppid == parent and b"--multiprocessing-fork" in cmdline:
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return _stat_fields(pid)[0] not in ("Z", "X")  # a zombie has exited
    except (OSError, IndexError):
        return False


@pytest.fixture
def recorded() -> Iterator[set[int]]:
    """Worker pids a test saw; any still alive at the end are killed (a failed test must
    not leave orphans behind either)."""
    pids: set[int] = set()
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@contextmanager
def running(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``knowhub ARGS``, stderr to ``log``; stdin open (a stdio server lives while it is)."""
    with (
        log.open("wb") as stderr,
        spawned(
            [sys.executable, "-m", "knowhub", *args],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=die_with(signal.SIGKILL),
        ) as process,
    ):
        yield process


def wait_for_workers(process: subprocess.Popen[Any], log: Path) -> set[int]:
    def check() -> set[int]:
        assert process.poll() is None, f"exited {process.returncode}: {log.read_text()}"
        found = workers_of(process.pid)
        return found if len(found) == WORKERS else set()

    workers: set[int] = wait_until(check, interval=0.05)
    return workers


def assert_workers_end(workers: set[int]) -> None:
    wait_until(lambda: not any(alive(pid) for pid in workers), interval=0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_killed_ingest_leaves_no_worker_process(
    tmp_path: Path, recorded: set[int], sig: signal.Signals
) -> None:
    folder = write_docs(tmp_path / "docs", 200)
    log = tmp_path / "ingest.log"
    args = ["--data-dir", str(tmp_path / "data"), "ingest", str(folder)]
    with running(args, slow_env(tmp_path), log) as process:
        recorded |= wait_for_workers(process, log)
        process.send_signal(sig)
        returncode = process.wait(timeout=WAIT_S)
    assert_workers_end(recorded)
    if sig == signal.SIGTERM:  # stopped like Ctrl-C: cleanly, saying what was kept
        assert returncode == 128 + signal.SIGTERM, log.read_text()
        assert "stopped: " in log.read_text()


@pytest.mark.parametrize("how", ["kill", "close stdin"])
def test_stopped_mcp_server_ends_at_once_leaving_no_worker_process(
    tmp_path: Path, recorded: set[int], how: str
) -> None:
    folder = write_docs(tmp_path / "docs", 200)
    log = tmp_path / "serve.log"
    args = ["--data-dir", str(tmp_path / "data"), "serve", "mcp", "--docs", str(folder)]
    env = slow_env(tmp_path, seconds=NEVER_S)  # its first sync never ends by itself
    with running(args, env, log) as process:
        recorded |= wait_for_workers(process, log)
        if how == "kill":
            process.kill()
        else:  # how a stdio client ends its server
            assert process.stdin is not None
            process.stdin.close()
        process.wait(timeout=WAIT_S)  # not waiting for the sync to end
    assert_workers_end(recorded)


def test_ctrl_c_stops_ingest_at_once_keeping_what_was_written(tmp_path: Path) -> None:
    import pexpect

    folder, data = write_docs(tmp_path / "docs", 60), tmp_path / "data"
    write(folder / "doc059.md", "# Doc 59\n\nParagraph 59 of words, stalled.\n")
    argv = [sys.executable, "-m", "knowhub", "--data-dir", str(data), "ingest", str(folder)]
    env = slow_env(tmp_path, stall="stalled")  # the batch of doc059 never ends
    with on_terminal(argv, env=env, preexec_fn=sigint_default) as child:
        child.expect(r", [1-5]\d/60 files")  # the progress line is past a few documents
        child.sendintr()  # Ctrl-C: SIGINT to the terminal's whole process group
        child.expect(pexpect.EOF)  # not waiting for the batch in flight
        child.close()
    output = child.before or ""
    assert child.exitstatus == 130, output
    assert "Aborted!" not in output
    found = re.search(r"stopped: (\d+) documents kept, (\d+) not done; re-run to continue", output)
    assert found, output
    kept, not_done = int(found[1]), int(found[2])
    assert kept >= 1 and not_done >= 1 and kept + not_done == 60

    listed = json.loads(knowhub("--data-dir", str(data), "docs", "--json", cwd=tmp_path).stdout)
    assert len(listed) == kept
    traces = knowhub("--data-dir", str(data), "traces", "--kind", "ingest", "--json", cwd=tmp_path)
    [trace] = json.loads(traces.stdout)["traces"]  # the stopped run is recorded, as stopped
    assert trace["error"].startswith("ingest stopped: ") and trace["ingest"]["added"] == kept
    rerun = subprocess.run(
        [sys.executable, "-m", "knowhub", "--data-dir", str(data), "ingest", str(folder)],
        env=slow_env(tmp_path, seconds=0),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"{not_done} added, 0 updated, {kept} unchanged" in rerun.stdout
    after = json.loads(knowhub("--data-dir", str(data), "docs", "--json", cwd=tmp_path).stdout)
    assert len(after) == 60  # the workers, started afresh, did the rest
    before = {(d["source"], d["doc_hash"], d["ingested_at"]) for d in listed}
    assert before <= {(d["source"], d["doc_hash"], d["ingested_at"]) for d in after}


def test_ingest_to_a_log_writes_progress_lines_counting_chunks_embedded(tmp_path: Path) -> None:
    # `knowhub ingest > log` in CI: a line every ingest.progress_interval_s (0: every step),
    # counting the chunks the worker processes embedded, not the files parsed.
    folder = write_docs(tmp_path / "docs", 6)
    env = {**slow_env(tmp_path, seconds=0), "KNOWHUB_INGEST__PROGRESS_INTERVAL_S": "0"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "knowhub",
            "--data-dir",
            str(tmp_path / "data"),
            "ingest",
            str(folder),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    embedded = json.loads(result.stdout)["embedded"]
    lines = [line for line in result.stderr.splitlines() if line.startswith("ingesting: ")]
    counts = [int(re.match(r"ingesting: (\d+)/", line)[1]) for line in lines]  # type: ignore[index]
    assert len(lines) >= 6 and counts == sorted(counts), result.stderr
    assert re.fullmatch(
        rf"ingesting: {embedded}/{embedded} chunks embedded \(100\.0 %\), 6/6 files, "
        r"([\d.,]+ chunks/s, )?done in [\d.]+ (s|min)",
        lines[-1],
    ), lines[-1]


@pytest.mark.anyio
async def test_server_shutdown_stops_an_ingest_in_flight(
    tmp_path: Path, recorded: set[int]
) -> None:
    write_docs(tmp_path / "root" / "big", 400)
    answers: list[str] = []
    env = {**slow_env(tmp_path, seconds=NEVER_S), **token_env()}  # an ingest that never ends
    with shared_server(tmp_path, env=env) as server:

        async def register() -> None:
            try:
                async with server.client() as control:
                    answers.append(text_of(await control.call_tool("register", {"path": "big"})))
            except Exception as exc:  # e.g. the client's reconnection once the server is gone
                answers.append(f"no answer: {exc!r}")

        async with anyio.create_task_group() as group:
            group.start_soon(register)
            recorded |= await anyio.to_thread.run_sync(wait_for_workers, server.process, server.log)
            server.process.terminate()  # the ingest would never end by itself
            await anyio.to_thread.run_sync(lambda: server.process.wait(timeout=WAIT_S))
    assert answers and "the server is shutting down" in answers[0], answers
    assert_workers_end(recorded)
