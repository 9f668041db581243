"""The suite itself: no tight wall-clock bound, no timed assertion, no process left behind.

A test that gave up after 15 s failed on a machine at load 7, and the driver process and
pipes it left open failed the next test on its worker (issue 36). So, read from the
sources of tests/: every bound on a wait is ``WAIT_S`` or at least ``MIN_BOUND_S``
(tests/helpers.py), unless it is the input of the behaviour under test (ALLOWED says why);
no assertion reads a clock (a test shows "at once" by ordering, speed is for benchmarks);
processes start only through the helpers that end them however a test ends; and a child
a test interrupts starts with SIGINT at its default (a suite started with ``&`` ignores
SIGINT, and so did the driver that test waited 15 s for).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import ROOT, WAIT_S

MIN_BOUND_S = 60.0
TESTS = ROOT / "tests"
CLOCKS = {"time.monotonic", "time.perf_counter", "time.time", "time.monotonic_ns"}
# Calls whose argument at this position is a bound in seconds.
POSITIONAL = {
    "wait": 0,  # Event, Condition, Barrier, Popen
    "join": 0,  # Thread, Process
    "result": 0,  # Future
    "recv": 0,  # websockets
    "fail_after": 0,
    "move_on_after": 0,
    "timeout": 0,  # pytest.mark.timeout, asyncio.timeout
    "wait_for": 1,  # asyncio.wait_for(aw, timeout)
    "communicate": 1,
    "wait_until": 1,
    "eventually": 1,
}
# Playwright counts in milliseconds.
MILLISECONDS = {"set_default_timeout", "set_default_navigation_timeout", "set_options"}
# Where a client's default is itself a short bound: httpx waits 5 s for a server, a
# websockets client 10 s for its handshake.
DEFAULT_BOUND = {
    **{
        f"{module}.{name}": "timeout"
        for module in ("httpx", "httpx2")
        for name in ("get", "post", "put", "patch", "delete", "request", "stream", "Client")
    },
    "httpx.AsyncClient": "timeout",
    "httpx2.AsyncClient": "timeout",
    "websockets.sync.client.connect": "open_timeout",
}
SPAWNERS = {"subprocess.Popen", "pexpect.spawn", "os.fork", "multiprocessing.Process"}
HELPERS = "tests/helpers.py"  # spawned() and on_terminal(): where processes are started
# A file that names SIGINT or sends Ctrl-C starts its children with sigint_default.
CTRL_C = "a Ctrl-C to a child not started with sigint_default"

SESSION_SERVER = "the session's server, stopped by its session fixture and at exit"
NEVER_ANSWERS = "the setting under test, against a server that never answers"
POSTGRES = "PostgreSQL sets its own handlers: SIGINT is its fast shutdown"
IN_PROCESS = "no child: the test's own process raises SIGINT, Python's handler set for it"
# (file, function, finding up to its value) -> why it is right there.
ALLOWED: dict[tuple[str, str, str], str] = {
    (HELPERS, "spawned", "subprocess.Popen()"): "the helper every test's process goes through",
    (HELPERS, "on_terminal", "pexpect.spawn()"): "the helper every terminal goes through",
    ("tests/pg_server.py", "PgServer.start", "subprocess.Popen()"): SESSION_SERVER,
    ("tests/pg_server.py", "PgServer.start", CTRL_C): POSTGRES,
    ("tests/pg_server.py", "PgServer.stop", CTRL_C): POSTGRES,
    ("tests/chroma_server.py", "ChromaServer.start", "subprocess.Popen()"): SESSION_SERVER,
    ("tests/milvus_server.py", "MilvusServer._start", "subprocess.Popen()"): SESSION_SERVER,
    ("tests/mcp_raw_stdio.py", "RawStdio.__init__", "subprocess.Popen()"): (
        "a raw JSON-RPC client owning its server: a context manager whose close() ends the"
        " process and its pipes however the test ends"
    ),
    ("tests/image/buildah.py", "started", "subprocess.Popen()"): (
        "a container in a session of its own: its whole process group is ended at block end"
    ),
    ("tests/integration/test_http_answers.py", "", "{'llm.timeout_s': …}"): NEVER_ANSWERS,
    (
        "tests/integration/test_crawl_robustness.py",
        "test_two_crawls_of_one_site_take_turns",
        "join(timeout=)",
    ): (
        "a wait that shows an absence (no request while the mirror is locked): on a loaded"
        " machine it can only pass for want of time, never fail wrongly"
    ),
    (
        "tests/integration/test_ingest_git.py",
        "test_a_host_that_never_answers_fails_after_the_timeout",
        "{'ingest.git.timeout_s': …}",
    ): NEVER_ANSWERS,
    (
        "tests/integration/test_llm_providers.py",
        "test_a_hung_server_times_out_without_retries",
        "{'llm.timeout_s': …}",
    ): NEVER_ANSWERS,
    (
        "tests/integration/test_llm_providers.py",
        "test_a_stream_that_stalls_after_its_first_token_times_out",
        "{'llm.timeout_s': …}",
    ): "the setting under test, against a stream that never goes on",
    (
        "tests/integration/test_mcp_pool.py",
        "test_a_server_that_failed_is_left_alone_for_retry_s",
        "McpPool(start_timeout_s=)",
    ): NEVER_ANSWERS,
    (
        "tests/integration/test_rerankers.py",
        "test_stage_keeps_the_fused_order_when_the_endpoint_fails",
        "HttpReranker(timeout_s=)",
    ): "the setting under test; every failure, a timeout too, must keep the fused order",
    (
        "tests/unit/query/test_rerank.py",
        "test_timeout_keeps_the_fused_order",
        "RerankStage(timeout_s=)",
    ): "the setting under test, against a reranker that never answers",
    (
        "tests/integration/test_ingest_stop_cache.py",
        "_ctrl_c",
        CTRL_C,
    ): IN_PROCESS,
    (
        "tests/integration/test_ingest_stop_cache.py",
        "test_a_second_ctrl_c_while_the_vectors_are_cached_loses_neither_them_nor_the_report",
        CTRL_C,
    ): IN_PROCESS,
    (
        "tests/integration/test_ingest_stop_cache.py",
        "test_a_ctrl_c_as_a_commit_ends_is_reported_with_what_the_commit_wrote",
        CTRL_C,
    ): IN_PROCESS,
    (
        "tests/integration/test_ingest_stop_cache.py",
        "test_a_ctrl_c_as_a_commit_ends_is_reported_with_what_the_commit_wrote.ctrl_c",
        CTRL_C,
    ): IN_PROCESS,
    (
        "tests/unit/ingest/test_stop_signals.py",
        "test_a_held_ctrl_c_reaches_its_handler_after_the_block_or_is_dropped",
        CTRL_C,
    ): IN_PROCESS,
    (
        "tests/unit/ingest/test_stop_signals.py",
        "test_an_ignored_ctrl_c_stays_ignored_and_a_sigterm_after_it_is_delivered",
        CTRL_C,
    ): IN_PROCESS,
    (
        "tests/integration/test_mcp_shared.py",
        "test_idle_sessions_unload_and_reload_with_changes",
        "a timed assertion",
    ): "a time stamp lies between two readings of the clock: an order, not a bound",
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    function: str
    what: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.path, self.function, re.split(r" = | \(| outside | without ", self.what)[0]

    def __str__(self) -> str:
        return f"{self.path}:{self.line} in {self.function or '<module>'}: {self.what}"


def findings(source: str, path: str) -> list[Finding]:
    """Every wait bound, timed assertion and process start in ``source`` (the file at
    ``path`` under the root) that breaks the rules above, allowed or not."""
    tree = ast.parse(source)
    # Most files read no clock: their assignments and assertions need no look for one.
    clocks = any(name.split(".")[-1] + "(" in source for name in CLOCKS)
    scan = _Scan(path, _constants(tree), clocks)
    scan.visit(tree)
    if "sigint_default" not in source:
        scan.found += [Finding(path, line, function, CTRL_C) for line, function in scan.interrupts]
    return scan.found


def _constants(tree: ast.Module) -> dict[str, float]:
    """The module's numeric constants (``TIMEOUT_S = 10``), to read bounds given by name."""
    found: dict[str, float] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], _number(node.value, {})
            if isinstance(target, ast.Name) and value is not None:
                found[target.id] = value
    return found


def _number(node: ast.expr, constants: dict[str, float]) -> float | None:
    """The seconds ``node`` says: a number, a numeric string (an environment variable's
    value) or a module constant; None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, str):
        try:
            return float(node.value)
        except ValueError:
            return None
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


class _Scan(ast.NodeVisitor):
    def __init__(self, path: str, constants: dict[str, float], clocks: bool) -> None:
        self.path, self.constants, self.clocks = path, constants, clocks
        self.imports: dict[str, str] = {}  # local name -> dotted origin, as they come
        self.found: list[Finding] = []
        self.interrupts: list[tuple[int, str]] = []  # where SIGINT is named or sent
        self.scope: list[str] = []
        self.timed: list[set[str]] = [set()]  # per function: names holding a clock's reading

    def report(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        self.found.append(Finding(self.path, line, ".".join(self.scope), what))

    def origin(self, func: ast.expr) -> str:
        """``httpx.get`` for ``httpx.get(...)`` after ``import httpx2 as httpx``, etc."""
        if isinstance(func, ast.Name):
            return self.imports.get(func.id, func.id)
        if isinstance(func, ast.Attribute):
            return f"{self.origin(func.value)}.{func.attr}"
        return ""

    def bound(self, node: ast.AST, what: str, value: ast.expr, scale: float = 1.0) -> None:
        seconds = _number(value, self.constants)
        if seconds is not None and seconds * scale < MIN_BOUND_S:
            self.report(node, f"{what} = {seconds * scale:g} s (below {MIN_BOUND_S:g} s)")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:  # import httpx2 as httpx
                self.imports[alias.asname] = alias.name
            else:  # import os.path binds os
                self.imports[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.timed.append(set())
        args = node.args
        positional = args.posonlyargs + args.args
        first = len(positional) - len(args.defaults)
        defaults = zip(positional[first:], args.defaults, strict=True)
        keyword = zip(args.kwonlyargs, args.kw_defaults, strict=True)
        for arg, default in [*defaults, *keyword]:
            if default is not None and "timeout" in arg.arg:
                self.bound(default, f"default {arg.arg}", default)
        self.generic_visit(node)
        self.timed.pop()
        self.scope.pop()

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.visit_FunctionDef(node)

    def visit_Call(self, node: ast.Call) -> None:
        origin = self.origin(node.func)
        name = origin.rsplit(".", 1)[-1]
        scale = 0.001 if name in MILLISECONDS or name.startswith(("to_", "not_to_")) else 1.0
        for keyword in node.keywords:
            if keyword.arg and "timeout" in keyword.arg:
                self.bound(node, f"{name}({keyword.arg}=)", keyword.value, scale)
        if name in POSITIONAL and len(node.args) > POSITIONAL[name]:
            self.bound(node, f"{name}(…)", node.args[POSITIONAL[name]], scale)
        elif name in MILLISECONDS and node.args:
            self.bound(node, f"{name}(…)", node.args[0], scale)
        given = {k.arg for k in node.keywords}
        if origin in DEFAULT_BOUND and DEFAULT_BOUND[origin] not in given and None not in given:
            self.report(node, f"{origin}() without {DEFAULT_BOUND[origin]}= (a short default)")
        if origin in SPAWNERS:
            self.report(node, f"{origin}() outside spawned()/on_terminal() (tests/helpers.py)")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.origin(node) == "signal.SIGINT" or node.attr == "sendintr":
            self.interrupts.append((node.lineno, ".".join(self.scope)))
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and "timeout" in str(key.value).lower():
                self.bound(node, f"{{{key.value!r}: …}}", value)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Add):
            for clock, other in ((node.left, node.right), (node.right, node.left)):
                if self.reads_clock(clock):
                    self.bound(node, "a deadline (clock + …)", other)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.reads_clock(node.value):
            for target in node.targets:
                self.timed[-1] |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        if self.reads_clock(node.test):
            self.report(node, "a timed assertion (show it by ordering or an event)")
        self.generic_visit(node)

    def reads_clock(self, node: ast.AST) -> bool:
        """Whether ``node`` calls a clock or reads a name that holds its reading."""
        if not self.clocks:
            return False
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and self.origin(inner.func) in CLOCKS:
                return True
            if isinstance(inner, ast.Name) and inner.id in self.timed[-1]:
                return True
        return False


@functools.cache
def suite_findings() -> list[Finding]:
    found: list[Finding] = []
    for path in sorted(TESTS.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if path == Path(__file__):  # its examples of what it finds
            continue
        found += findings(path.read_text(encoding="utf-8"), relative)
    return found


def test_the_suite_waits_generously_asserts_no_timing_and_starts_processes_by_helper() -> None:
    found = [str(f) for f in suite_findings() if f.key not in ALLOWED]
    assert not found, (
        "use WAIT_S from tests/helpers.py for a wait (or allow the input under test in "
        "ALLOWED, saying why), show speed by ordering, start processes with spawned():\n  "
        + "\n  ".join(found)
    )


def test_every_allowance_is_still_needed() -> None:
    needed = {f.key for f in suite_findings()}
    assert set(ALLOWED) <= needed, sorted(set(ALLOWED) - needed)


def test_the_shared_bound_is_generous() -> None:
    assert WAIT_S >= MIN_BOUND_S


BAD = """
import signal, subprocess, time
import httpx2 as httpx
from websockets.sync.client import connect

LIMIT = 5

def helper(proc, timeout=10):
    began = time.monotonic()
    proc.wait(LIMIT)
    proc.communicate(timeout=15)
    took = time.monotonic() - began
    assert took < 3
    httpx.get("http://x")
    connect("ws://x")
    subprocess.Popen(["true"])
    deadline = time.monotonic() + 20
    page.set_default_timeout(15_000)
    expect(x).to_be_visible(timeout=2000)
    settings = {"llm.timeout_s": 0.5, "KNOWHUB_LLM__TIMEOUT_S": "2"}
    proc.wait(timeout=120)
    proc.send_signal(signal.SIGINT)
"""


def test_the_guard_finds_each_kind_of_breach() -> None:
    found = [f.what for f in findings(BAD, "tests/example.py")]
    assert found == [
        "default timeout = 10 s (below 60 s)",
        "wait(…) = 5 s (below 60 s)",
        "communicate(timeout=) = 15 s (below 60 s)",
        "a timed assertion (show it by ordering or an event)",
        "httpx2.get() without timeout= (a short default)",
        "websockets.sync.client.connect() without open_timeout= (a short default)",
        "subprocess.Popen() outside spawned()/on_terminal() (tests/helpers.py)",
        "a deadline (clock + …) = 20 s (below 60 s)",
        "set_default_timeout(…) = 15 s (below 60 s)",
        "to_be_visible(timeout=) = 2 s (below 60 s)",
        "{'llm.timeout_s': …} = 0.5 s (below 60 s)",
        "{'KNOWHUB_LLM__TIMEOUT_S': …} = 2 s (below 60 s)",
        CTRL_C,
    ]
