"""docs/mcp.md's "Protocol revisions and replicas": the two replica commands, with the
pinned client of its example talking to them through a round-robin load balancer."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import anyio

from tests.helpers import ROOT, WAIT_S, cli_env, write
from tests.mcp_helpers import http_server, local_tools, wait_until
from tests.round_robin import round_robin

DOC = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Protocol revisions and replicas", 1)[1].split("\n## ", 1)[0]
SECRET = "replicas-doc-secret"
ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps([{"name": "ops", "token_env": "KH_DOC_TOKEN"}]),
    "KH_DOC_TOKEN": SECRET,
}


def _block(language: str) -> str:
    [block] = re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.DOTALL)
    return block


def _replica_args(line: str, data: Path, docs: Path) -> list[str]:
    """One documented command's arguments for http_server: paths made the test's, and the
    data dir, transport and port left to it."""
    args = shlex.split(line)
    assert args[0] == "knowhub" and args[3:7] == ["serve", "mcp", "--transport", "http"], line
    places = {"/srv/knowhub": str(data), "/srv/docs": str(docs)}
    args = [places.get(a, a) for a in args]
    assert args[1:3] == ["--data-dir", str(data)], line
    port = args.index("--port")
    return args[7:port] + args[port + 2 :]


def test_the_pinned_client_is_answered_by_two_replicas_in_turn(tmp_path: Path) -> None:
    docs, data = tmp_path / "docs", tmp_path / "data"
    write(docs / "ops.md", "# Operations\n\n## Backups\n\nBackups run every night at 02:30.\n")
    commands = _block("sh").strip().splitlines()
    assert len(commands) == 2
    with ExitStack() as stack:
        replicas = [
            stack.enter_context(
                http_server(*_replica_args(line, data, docs), cwd=tmp_path, data_dir=data, env=ENV)
            )
            for line in commands
        ]
        for replica in replicas:
            wait_until(lambda r=replica: r.get("/health", SECRET).json()["indexing"] is False)
        with round_robin(*(r.url for r in replicas)) as (url, proxy):
            example = _block("python")
            example = example.replace("http://127.0.0.1:8080/mcp", url + "/mcp")
            example = example.replace("YOUR_TOKEN", SECRET)
            ran = subprocess.run(
                [sys.executable, "-c", example],
                env=cli_env(),
                capture_output=True,
                text=True,
                timeout=WAIT_S,
            )
    assert ran.returncode == 0, ran.stderr
    protocol, tools, source = ran.stdout.splitlines()
    assert protocol == "protocol 2026-07-28"
    assert tools == f"tools {anyio.run(local_tools, tmp_path / 'listed')}"
    assert source == "ops.md"
    # Its requests, no handshake among them, went to the replicas in turn.
    assert "initialize" not in [s.rpc for s in proxy.served]
    assert {s.upstream for s in proxy.served} == {r.url for r in replicas}
