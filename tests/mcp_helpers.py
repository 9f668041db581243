"""Start real ``knowhub serve mcp`` processes and talk to them with the official SDK client."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2 as httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from tests.helpers import WAIT_S, cli_env, fast_settings, free_port, spawned, tls


def stdio_params(*args: str, cwd: Path, env: dict[str, str] | None = None) -> StdioServerParameters:
    """Parameters that launch ``python -m knowhub ARGS serve mcp …`` on stdio."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "knowhub", *args], env=cli_env(env), cwd=str(cwd)
    )


@dataclass
class HttpServer:
    """A ``knowhub serve mcp --transport http`` child process."""

    url: str
    process: subprocess.Popen[str]
    log: Path
    token: str | None = None
    extra_headers: dict[str, str] = field(default_factory=dict)

    def headers(self, token: str | None = None) -> dict[str, str]:
        value = token if token is not None else self.token
        auth = {"Authorization": f"Bearer {value}"} if value else {}
        return {**auth, **self.extra_headers}

    @asynccontextmanager
    async def client(self, path: str = "/mcp", token: str | None = None) -> AsyncIterator[Client]:
        async with (
            httpx.AsyncClient(headers=self.headers(token), timeout=WAIT_S, verify=tls()) as http,
            Client(streamable_http_client(self.url + path, http_client=http)) as c,
        ):
            yield c

    def get(self, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = self.headers(token)
        return httpx.get(self.url + path, headers=headers, timeout=WAIT_S, verify=tls(), **kwargs)

    def post(self, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers(token), **kwargs.pop("headers", {})}
        return httpx.post(self.url + path, headers=headers, timeout=WAIT_S, verify=tls(), **kwargs)

    def logs(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def running(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    preexec: Callable[[], None] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[str], Path]]:
    """Run ``python -m knowhub ARGV --port P`` until the block ends; yield (url, process, log).

    Ready when ``/health`` answers; stopped with SIGTERM (SIGKILL after ``WAIT_S``).
    ``preexec`` runs in the child before knowhub starts (a resource limit, say).
    """
    port = free_port()
    log = cwd / f"server-{port}.log"
    command = [sys.executable, "-m", "knowhub", *argv, "--port", str(port)]
    with (
        log.open("w", encoding="utf-8") as out,
        spawned(
            command,
            cwd=cwd,
            env=cli_env(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec,
        ) as process,
    ):
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process, log)
        yield url, process, log


@contextmanager
def http_server(
    *serve_args: str,
    cwd: Path,
    data_dir: Path,
    env: dict[str, str] | None = None,
    token: str | None = None,
) -> Iterator[HttpServer]:
    """Run ``knowhub --data-dir D serve mcp --transport http --port P SERVE_ARGS`` until exit."""
    argv = ["--data-dir", str(data_dir), "serve", "mcp", "--transport", "http", *serve_args]
    with running(argv, cwd, env) as (url, process, log):
        yield HttpServer(url, process, log, token)


def wait_ready(
    url: str, process: subprocess.Popen[str], log: Path, timeout: float = WAIT_S
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            logs = log.read_text(encoding="utf-8", errors="replace")
            raise AssertionError(f"server exited {process.returncode}:\n{logs}")
        try:
            if httpx.get(url + "/health", timeout=timeout, verify=tls()).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    logs = log.read_text(encoding="utf-8", errors="replace")
    raise AssertionError(f"server not ready after {timeout} s:\n{logs}")


def wait_until(check: Any, timeout: float = WAIT_S, interval: float = 0.25) -> Any:
    """Poll ``check()`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s (last value: {last!r})")


async def eventually(check: Any, timeout: float = WAIT_S, interval: float = 0.25) -> Any:
    """Async :func:`wait_until`: await ``check()`` until truthy, without blocking the loop."""
    import anyio

    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await anyio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s (last value: {last!r})")


def text_of(result: CallToolResult) -> str:
    """A tool result's text blocks, joined."""
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


# The MCP tools an agent is offered, in tools/list's order: the data tools (search_docs as
# by default; ingest last, absent with --read-only) and shared mode's control tools. The
# one place a test names them all: test_mcp_memory.py pins the servers to exactly these;
# every other test compares what a transport offers with what the server lists
# (:func:`local_tools`, :func:`shared_tools`), so a tool added is pinned here once.
DATA_TOOLS = (
    "query_knowledge_hub",
    "search_docs",
    "list_collections",
    "get_document_summary",
    "get_content",
    "read_document",
    "ask",
    "ingest",
)
CONTROL_TOOLS = ("register", "unregister", "list")


async def local_tools(where: Path, *, read_only: bool = False) -> list[str]:
    """The tools ``serve mcp``'s local server lists (default settings, ``--read-only``),
    read from the server ``build_local`` builds, with no transport in between; ``where``
    holds its empty folder and data dir."""
    from knowhub.interfaces.mcp.metrics import Metrics
    from knowhub.interfaces.mcp.server import ServeOptions, build_local

    docs = where / "listed-docs"
    docs.mkdir(parents=True, exist_ok=True)
    options = ServeOptions(docs=docs, read_only=read_only)
    server, service = build_local(fast_settings(where / "listed-data"), options, Metrics())
    try:
        return [tool.name for tool in await server.list_tools()]
    finally:
        service.close()


async def shared_tools(where: Path) -> tuple[list[str], list[str]]:
    """The tools shared mode's session server and control server list (default settings),
    read from the servers ``build_shared`` builds; ``where`` holds their data dir."""
    from knowhub.interfaces.mcp.metrics import Metrics
    from knowhub.interfaces.mcp.server import ServeOptions, build_shared

    root = where / "listed-root"
    root.mkdir(parents=True, exist_ok=True)
    options = ServeOptions(transport="http", mode="shared", path_root=root)
    data, control, registry = build_shared(fast_settings(where / "listed-data"), options, Metrics())
    try:
        return [t.name for t in await data.list_tools()], [
            t.name for t in await control.list_tools()
        ]
    finally:
        registry.close()
