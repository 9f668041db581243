"""`knowhub serve mcp` as a third-party client sees it: the MCP Inspector CLI (npm).

The Inspector is installed by `make test` into .cache/mcp-inspector (pinned version); point
KNOWHUB_MCP_INSPECTOR at another `mcp-inspector` executable to use that one instead. It is
never assumed present: without it these tests fail and say how to install it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import FAST_ENV, ROOT, cli_env, write
from tests.mcp_helpers import HttpServer, http_server, local_tools
from tests.round_robin import round_robin

INSPECTOR_ENV = "KNOWHUB_MCP_INSPECTOR"
INSPECTOR_BIN = ROOT / ".cache" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"
# Exit statuses the Inspector CLI documents (EXIT_CODES in its source).
AUTH_REQUIRED, TOOL_ERROR = 3, 5
TOKEN_ENV = {"KNOWHUB_SERVER__TOKENS": '[{"name": "a", "token_env": "TOK_A"}]', "TOK_A": "secret"}

Inspect = Callable[..., "Run"]


class Run:
    """One finished Inspector CLI run: exit status, parsed JSON output, raw streams."""

    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.returncode = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        out, err = self.stdout[-3000:], self.stderr[-3000:]
        return f"Run(rc={self.returncode}, stdout={out!r}, stderr={err!r})"

    @property
    def result(self) -> dict[str, Any]:
        """``result`` of the JSON object `--format json` prints on stdout."""
        assert self.stdout.strip(), self
        data: dict[str, Any] = json.loads(self.stdout)["result"]
        return data

    @property
    def error(self) -> dict[str, Any]:
        """The ``{"error": {...}}`` envelope, the last line the CLI writes on stderr."""
        lines = [line for line in self.stderr.splitlines() if line.startswith('{"error"')]
        assert lines, self
        envelope: dict[str, Any] = json.loads(lines[-1])["error"]
        return envelope


def inspector_path() -> Path:
    override = os.environ.get(INSPECTOR_ENV)
    path = Path(override) if override else INSPECTOR_BIN
    if not path.is_file():
        pytest.fail(
            f"MCP Inspector CLI not found at {path}: run `make test`, which installs "
            "@modelcontextprotocol/inspector into .cache/mcp-inspector "
            f"(or set {INSPECTOR_ENV} to an mcp-inspector executable)",
            pytrace=False,
        )
    return path


@pytest.fixture
def inspect(tmp_path: Path) -> Inspect:
    """Run ``mcp-inspector --cli --format json ARGS``; its state stays under tmp_path."""
    home = tmp_path / "inspector-home"
    home.mkdir()
    env = cli_env(
        {
            "HOME": str(home),  # nothing lands in the real ~/.mcp-inspector
            "MCP_CATALOG_PATH": str(home / "mcp.json"),
            "MCP_STORAGE_DIR": str(home / "storage"),
            "MCP_CLIENT_CONFIG_PATH": str(home / "client.json"),
            "MCP_INSPECTOR_OAUTH_STATE_PATH": str(home / "oauth.json"),
        }
    )

    def run(*args: str) -> Run:
        # The Inspector's own 30 s to connect was too short for a server starting on a busy
        # machine (the suite runs on xdist workers); the run's timeout bounds it instead.
        done = subprocess.run(
            [
                str(inspector_path()),
                "--cli",
                "--format",
                "json",
                "--connect-timeout",
                "80000",
                *args,
            ],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
        )
        return Run(done)

    return run


def write_docs(folder: Path) -> Path:
    write(folder / "guide.md", "# Guide\n\n## Backups\n\nBackups run every night at 02:30.\n")
    write(folder / "hr.txt", "Vacation policy: employees get 28 days of paid leave.\n")
    return folder


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_docs(tmp_path / "docs")


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One HTTP server for the module, local mode over the docs, token 'secret' required."""
    root = tmp_path_factory.mktemp("http")
    docs = write_docs(root / "docs")
    with http_server(
        "--docs", str(docs), cwd=root, data_dir=root / "data", env=TOKEN_ENV, token="secret"
    ) as server:
        yield server


@pytest.fixture
def stdio_server(docs: Path, tmp_path: Path) -> list[str]:
    """Inspector arguments that launch the server on stdio: env first, the command after --."""
    env_args = [arg for key, value in FAST_ENV.items() for arg in ("-e", f"{key}={value}")]
    command = [
        sys.executable,
        "-m",
        "knowhub",
        "--data-dir",
        str(tmp_path / "data"),
        "serve",
        "mcp",
        "--docs",
        str(docs),
    ]
    return [*env_args, "--", *command]


def _served_tools(tmp_path: Path) -> set[str]:
    """The tools the server lists, read from the one ``serve mcp`` builds (in this process)."""
    return set(anyio.run(local_tools, tmp_path / "listed"))


def _sources(result: dict[str, Any]) -> list[str]:
    return [hit["source"] for hit in result["structuredContent"]["hits"]]


def test_stdio_lists_tools_and_answers_a_query(
    inspect: Inspect, stdio_server: list[str], tmp_path: Path
) -> None:
    listed = inspect("--method", "tools/list", *stdio_server)
    assert listed.returncode == 0, listed
    assert {tool["name"] for tool in listed.result["tools"]} == _served_tools(tmp_path)

    called = inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "query_knowledge_hub",
        "--tool-arg",
        "query=when do backups run",
        "top_k=2",
        *stdio_server,
    )
    assert called.returncode == 0, called
    assert called.result["isError"] is False
    assert _sources(called.result)[0] == "guide.md"
    text = called.result["content"][0]["text"]
    assert "guide.md, Guide > Backups" in text and "02:30" in text


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("query_knowledge_hub", ["query=backups", "top_k=99"], "less than or equal to 20"),
        ("get_content", ["chunk_id=no-such-chunk"], "no chunk with id 'no-such-chunk'"),
    ],
    ids=["invalid-argument", "unknown-chunk"],
)
def test_stdio_tool_error_is_reported_as_an_error(
    inspect: Inspect, stdio_server: list[str], tool: str, args: list[str], message: str
) -> None:
    run = inspect("--method", "tools/call", "--tool-name", tool, "--tool-arg", *args, *stdio_server)
    assert run.returncode == TOOL_ERROR, run
    assert run.result["isError"] is True
    assert message in run.result["content"][0]["text"]
    assert run.error["code"] == "tool_is_error"


def _http_target(url: str) -> list[str]:
    """The Inspector's arguments for ``url`` over HTTP with the module's token."""
    return ["--transport", "http", "--header", "Authorization: Bearer secret", "--", url]


def _lists_and_queries(
    inspect: Inspect, target: list[str], tmp_path: Path, query: str, source: str
) -> None:
    """tools/list offers the served tools; the top hit of ``query`` is ``source``."""
    listed = inspect("--method", "tools/list", *target)
    assert listed.returncode == 0, listed
    assert {tool["name"] for tool in listed.result["tools"]} == _served_tools(tmp_path)
    arguments = json.dumps({"query": query, "top_k": 1})
    called = inspect(
        "--method", "tools/call", "--tool-name", "query_knowledge_hub",
        "--tool-args-json", arguments, *target,
    )  # fmt: skip
    assert called.returncode == 0, called
    assert _sources(called.result) == [source]


def test_http_with_token_lists_tools_and_answers_a_query(
    inspect: Inspect, token_server: HttpServer, tmp_path: Path
) -> None:
    target = _http_target(f"{token_server.url}/mcp")
    _lists_and_queries(inspect, target, tmp_path, "how many days of paid leave", "hr.txt")

    collections = inspect("--method", "tools/call", "--tool-name", "list_collections", *target)
    assert collections.returncode == 0, collections
    assert "default" in json.dumps(collections.result["structuredContent"])


@pytest.mark.parametrize("header", [None, "Authorization: Bearer wrong"], ids=["none", "wrong"])
def test_http_without_the_token_fails(
    inspect: Inspect, token_server: HttpServer, header: str | None
) -> None:
    headers = ["--header", header] if header else []
    # --stored-auth-only: fail at once instead of offering an interactive OAuth login.
    run = inspect(
        "--method",
        "tools/list",
        "--transport",
        "http",
        "--stored-auth-only",
        *headers,
        "--",
        f"{token_server.url}/mcp",
    )
    assert run.returncode == AUTH_REQUIRED, run
    assert not run.stdout.strip(), run
    assert run.error["code"] == "auth_required"
    assert "401" in run.error["message"] and "bearer token" in run.error["message"]


def test_http_through_a_load_balancer_over_two_replicas(inspect: Inspect, tmp_path: Path) -> None:
    """No session pins the Inspector (an older protocol revision, with ``initialize``) to the
    replica that answered it: each of its requests may land on either."""
    docs = write_docs(tmp_path / "docs")
    data = tmp_path / "data"
    with (
        http_server("--docs", str(docs), cwd=tmp_path, data_dir=data, env=TOKEN_ENV) as a,
        http_server("--docs", str(docs), cwd=tmp_path, data_dir=data, env=TOKEN_ENV) as b,
        round_robin(a.url, b.url) as (url, proxy),
    ):
        target = _http_target(f"{url}/mcp")
        _lists_and_queries(inspect, target, tmp_path, "when do backups run", "guide.md")
    assert proxy.upstreams_of("initialize") and len({s.upstream for s in proxy.served}) == 2
    assert {s.rpc for s in proxy.served} >= {"initialize", "tools/list", "tools/call"}
