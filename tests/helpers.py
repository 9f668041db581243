"""Helpers shared by tests: fast deterministic settings and file writing."""

from __future__ import annotations

import atexit
import ctypes
import functools
import itertools
import logging
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from knowhub import Settings, load_settings

if TYPE_CHECKING:
    import pexpect

S = TypeVar("S")
_PR_SET_PDEATHSIG = 1

ROOT = Path(__file__).resolve().parents[1]

# The most a test waits for something that should happen (a server to answer, a process to
# exit, a condition to hold): a safety bound, reached only when something is broken, so it
# is generous: the suite must pass at load 8 on 2 cores (a 15 s bound failed at load ~7,
# issue 36). No test asserts how fast something happens (speed is for benchmarks): a test
# shows "at once" by making the alternative take NEVER_S. tests/unit/test_suite_bounds.py
# keeps it so.
WAIT_S = 120.0
# How long something lasts that a test must not wait for (a model that never answers, a
# call that never returns, a batch that never ends): longer than WAIT_S, so a wait that
# ends shows it did not wait for that; finite, so even a failed test's leftovers end.
NEVER_S = 10 * WAIT_S


def fast_settings(data_dir: Path, **overrides: object) -> Settings:
    """Settings with the hashing embedder (instant, deterministic) and no config file."""
    values: dict[str, object] = {
        "data_dir": data_dir,
        "embedder.provider": "hashing",
        "embedder.workers": 1,
        # Defaults that are waits the tests must not race: the reranker's deadline (10 s)
        # and how long local mode's first search waits for the first sync (5 s).
        "reranker.timeout_s": WAIT_S,
        "server.first_sync_wait_s": WAIT_S,
    }
    values.update(overrides)
    return load_settings(env={}, overrides=values, cwd=data_dir.parent)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def gzip_of_zeros(path: Path, megabytes: int) -> Path:
    """A gzip file of ``megabytes`` MB of zero bytes (a decompression bomb: some 1 kB a MB),
    written a megabyte at a time so that the test never holds it."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: with a gzip header and trailer
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for _ in range(megabytes):
            out.write(packer.compress(bytes(1 << 20)))
        out.write(packer.flush())
    return path


def long_name_tgz(path: Path, length: int) -> Path:
    """A .tar.gz whose one member, ``short.md``, has a GNU long name record of ``length``
    bytes of 'a' (some 1 kB a MB packed), written a megabyte at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    record = tarfile.TarInfo("././@LongLink")
    record.size, record.type = length, tarfile.GNUTYPE_LONGNAME
    member = tarfile.TarInfo("short.md")
    member.size = 3
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        out.write(packer.compress(record.tobuf(format=tarfile.GNU_FORMAT)))
        chunk = b"a" * (1 << 20)
        for start in range(0, length, len(chunk)):
            out.write(packer.compress(chunk[: length - start]))
        out.write(packer.compress(bytes(-length % tarfile.BLOCKSIZE)))
        out.write(packer.compress(member.tobuf(format=tarfile.GNU_FORMAT) + b"# A"))
        out.write(packer.compress(bytes(tarfile.BLOCKSIZE - 3 + 2 * tarfile.BLOCKSIZE)))
        out.write(packer.flush())
    return path


# Root writes through any mode bits by its capabilities: the mode tests run the command as
# root without them (util-linux's setpriv), so the bits apply to it as to any owner.
AS_OWNER = (
    [
        "setpriv",
        "--bounding-set=-dac_override,-dac_read_search",
        "--inh-caps=-dac_override,-dac_read_search",
    ]
    if os.geteuid() == 0
    else []
)


# The hashing embedder keeps subprocess tests fast; KNOWHUB_* from the caller's shell never leak in.
# Defaults that are waits the tests must not race are WAIT_S, as in fast_settings.
FAST_ENV = {
    "KNOWHUB_EMBEDDER__PROVIDER": "hashing",
    "KNOWHUB_EMBEDDER__WORKERS": "1",
    "KNOWHUB_RERANKER__TIMEOUT_S": str(WAIT_S),
    "KNOWHUB_SERVER__FIRST_SYNC_WAIT_S": str(WAIT_S),
    # A child that crashes in C (a make test run saw an MCP server end with SIGSEGV, once,
    # nothing on its stderr) says where, in the stderr the failing assertion shows.
    "PYTHONFAULTHANDLER": "1",
}


# Children may write bytecode even where the shell forbids it: under PYTHONDONTWRITEBYTECODE
# (some container images set it) every CLI and server process of the suite compiled knowhub's
# sources again, ~0.35 s of CPU apiece.
_NOT_INHERITED = ("PYTHONDONTWRITEBYTECODE",)


def embedder_plugin(root: Path, name: str, source: str) -> str:
    """Install ``source`` (a module defining ``create(settings)``) as the embedder plugin
    ``name`` under ``root``: a module and a dist-info with its ``knowhub.embedders`` entry
    point, as pip would. Returns the PYTHONPATH that finds it (the current one after it)."""
    module = f"knowhub_{name}_embedder"
    write(root / f"{module}.py", source)
    info = root / f"{module}-0.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {module}\nVersion: 0\n")
    write(info / "entry_points.txt", f"[knowhub.embedders]\n{name} = {module}:create\n")
    return os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)


# An embedder plugin (install it with embedder_plugin) that holds an ingest until the test
# opens a gate: the hashing embedder, holding the batches HELD_TEXT is in (unset: every batch
# after the first) until the file GATE_FILE names exists. HELD_BATCH passages a batch (1),
# in worker processes when HELD_PARALLEL is 1.
HELD_EMBEDDER = '''
import os
import time
from pathlib import Path

from knowhub.providers.embedders.hashing import HashingEmbedder


class HeldEmbedder(HashingEmbedder):
    """The hashing embedder, holding batches until the test creates GATE_FILE: a build or
    an ingest that stays in progress until it is stopped."""

    def __init__(self):
        super().__init__(64)
        self.model_id = "held-64"
        self.batch_size = int(os.environ.get("HELD_BATCH", "1"))
        self.parallel = os.environ.get("HELD_PARALLEL") == "1"
        self.batches = 0

    def _held(self, texts):
        text = os.environ.get("HELD_TEXT")
        if text:
            return any(text in passage for passage in texts)
        self.batches += 1
        return self.batches > 1

    def _encode(self, texts, is_query):
        if not is_query and self._held(texts):
            deadline = time.monotonic() + 120
            while not Path(os.environ["GATE_FILE"]).exists():
                if time.monotonic() > deadline:
                    raise RuntimeError("the test never opened the gate")
                time.sleep(0.01)
        return super()._encode(texts, is_query)


def create(settings):
    return HeldEmbedder()
'''


def held_embedder(root: Path) -> dict[str, str]:
    """The environment of a knowhub that embeds with :data:`HELD_EMBEDDER` (installed under
    ``root``), its gate the file ``root/gate``."""
    return {
        "PYTHONPATH": embedder_plugin(root / "plugin", "held", HELD_EMBEDDER),
        "GATE_FILE": str(root / "gate"),
        "KNOWHUB_EMBEDDER__PROVIDER": "held",
    }


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KNOWHUB_") and k not in _NOT_INHERITED
    }
    return {**inherited, **FAST_ENV, **(extra or {})}


def knowhub(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m knowhub ARGS`` as a user would, output captured (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "knowhub", *args],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )


RUNAWAY_SAFETY_S = 120  # a bound on a runaway computation, never the assertion


def finishes(script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (Python) in a child, stopped after :data:`RUNAWAY_SAFETY_S`: what
    may run away (a regular expression holds the interpreter until it ends, so no thread
    of the test could stop it) gets a bound that fails the test, not the suite."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=RUNAWAY_SAFETY_S,
        cwd=ROOT,
        check=False,
    )


def knowhub_on_terminal(*args: str, cwd: Path) -> tuple[int | None, str]:
    """Run ``python -m knowhub ARGS`` on a pseudo-terminal; return exit status and output."""
    import pexpect

    argv = [sys.executable, "-m", "knowhub", *args]
    with on_terminal(argv, cwd=str(cwd), env=cli_env()) as child:
        child.expect(pexpect.EOF)
        child.close()
    return child.exitstatus, child.before or ""


@contextmanager
def spawned(argv: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """``subprocess.Popen(argv, **popen)`` for the block. However the block ends (a failed
    assertion, a timeout), the process is stopped (:func:`stop_process`), reaped and its
    pipes closed: a test's leftovers must not fail the next test on its worker (a pipe
    left open raises its ResourceWarning in whichever test the collector runs next)."""
    process = subprocess.Popen(argv, **popen)
    with process:  # on the way out: its pipes closed, the process reaped
        try:
            yield process
        finally:
            stop_process(process)


@contextmanager
def on_terminal(argv: Sequence[str], **spawn: Any) -> Iterator[pexpect.spawn]:
    """``argv`` on a pseudo-terminal (``pexpect.spawn``, text, ``WAIT_S`` to expect
    anything) for the block; closed, and the process ended, however the block ends."""
    import pexpect

    child = pexpect.spawn(argv[0], list(argv[1:]), encoding="utf-8", timeout=WAIT_S, **spawn)
    try:
        yield child
    finally:
        child.close(force=True)


# Test servers listen below the kernel's ephemeral range (32768-60999 on Linux), so a port
# handed out here is never taken meanwhile as the source port of some outgoing connection,
# and each pytest-xdist worker draws from a slice of its own, so two workers never pick the
# same one; the random start keeps concurrent runs of the suite apart too.
_PORTS = range(10_000, 32_768)
_cursor = itertools.count(random.randrange(len(_PORTS)))  # next() is atomic: no lock


def _port_slice() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw3" in a worker, unset otherwise
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count < 2:
        return _PORTS
    size = len(_PORTS) // count
    start = _PORTS.start + int(worker[2:]) % count * size
    return range(start, start + size)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, from this process's slice;
    successive calls walk the slice, so a port just given back is not handed out again."""
    ports = _port_slice()
    for _ in range(len(ports)):
        port = ports[next(_cursor) % len(ports)]
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use, or lingering in TIME_WAIT
            return port
    raise RuntimeError(f"no free TCP port on 127.0.0.1 in {ports.start}-{ports.stop - 1}")


@functools.cache
def tls() -> ssl.SSLContext:
    """One TLS context for the tests' HTTP clients (``verify=tls()``): httpx builds a new one
    for every client, ``httpx.get`` included, loading the CA bundle each time (~60 ms of CPU;
    polling a starting server every 50 ms kept a core busy that the server needed)."""
    return ssl.create_default_context()


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


def older_than(folder: Path, seconds: float) -> bool:
    """Whether ``folder`` was last modified over ``seconds`` ago; False once it is gone
    (another test process may delete it meanwhile: its own at exit, or the same stale one)."""
    try:
        return time.time() - folder.stat().st_mtime > seconds
    except FileNotFoundError:
        return False


def die_with(sig: int) -> Callable[[], None]:
    """A ``preexec_fn`` that has the child sent ``sig`` when the test process dies, even by
    SIGKILL (it runs in the child, after any uid switch, which would clear it)."""

    def arm() -> None:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)

    return arm


def sigint_default() -> None:
    """A ``preexec_fn`` for a child the test interrupts as Ctrl-C would: SIGINT at its
    default, as a shell starts a foreground command. A test process started in the
    background (``… &`` in a script) ignores SIGINT, its children inherit that across exec,
    and a Python started with SIGINT ignored keeps ignoring it: the interrupt never came."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_process(proc: subprocess.Popen[Any] | None, sig: int = signal.SIGTERM) -> None:
    """Send ``sig``, give the process ``WAIT_S`` to exit, then kill it."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Caught(logging.Handler):
    """The log records that ``match``, kept as they are emitted (in any thread), with
    ``arrived`` set at the first: a test waits on that event, which wakes as the record is
    logged, instead of polling caplog with sleeps."""

    def __init__(self, match: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__(logging.NOTSET)
        self.match = match
        self.records: list[logging.LogRecord] = []
        self.arrived = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.match(record):
            self.records.append(record)
            self.arrived.set()

    def first(self, timeout: float = WAIT_S) -> logging.LogRecord:
        """The first record that matched, once logged (waiting up to ``timeout`` for it)."""
        assert self.arrived.wait(timeout), f"no such log record within {timeout} s"
        return self.records[0]


@contextmanager
def catching(
    logger: str, match: Callable[[logging.LogRecord], bool], level: int = logging.INFO
) -> Iterator[Caught]:
    """``logger``'s records from ``level`` up that ``match``, caught while the block runs
    (the logger's level is set for it, as caplog.at_level sets it)."""
    target = logging.getLogger(logger)
    caught, previous = Caught(match), target.level
    target.setLevel(level)
    target.addHandler(caught)
    try:
        yield caught
    finally:
        target.removeHandler(caught)
        target.setLevel(previous)
