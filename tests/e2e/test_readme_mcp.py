"""The MCP commands and client configurations of docs/mcp.md work as written."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.helpers import ROOT
from tests.mcp_helpers import http_server, local_tools, stdio_params

README = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
SECTION = README.split("## Connect an agent (MCP)", 1)[1].split("\n## ", 1)[0]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.DOTALL)


def _servers() -> list[dict[str, Any]]:
    return [json.loads(b)["mcpServers"]["knowhub"] for b in _blocks("json")]


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "examples" / "docs" / "en", docs)
    return docs


def test_every_client_configuration_is_json_for_the_knowhub_server() -> None:
    servers = _servers()
    assert len(servers) == 4
    assert sum("url" in s for s in servers) == 2
    for server in servers:
        if "url" in server:
            assert server["url"] == "http://127.0.0.1:8080/mcp"
            assert server["headers"]["Authorization"].startswith("Bearer ")


@pytest.mark.anyio
async def test_the_stdio_configuration_starts_a_working_server(tmp_path: Path) -> None:
    stdio = next(s for s in _servers() if s["command"].endswith("/bin/knowhub"))
    places = {
        "/path/to/knowhub-data": str(tmp_path / "data"),
        "/path/to/your/docs": str(_docs(tmp_path)),
    }
    args = [places.get(a, a) for a in stdio["args"]]
    async with Client(stdio_params(*args, cwd=tmp_path)) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == set(await local_tools(tmp_path / "listed"))
        result = await client.call_tool("list_collections", {})
        assert not result.is_error


@pytest.mark.anyio
async def test_the_http_configurations_reach_a_server_with_the_documented_token(
    tmp_path: Path,
) -> None:
    (tmp_path / "knowhub.yaml").write_text(_blocks("yaml")[0], encoding="utf-8")
    env = {"KNOWHUB_TOKEN": "laptop-secret", "KNOWHUB_CI_TOKEN": "ci-secret"}
    docs = _docs(tmp_path)
    with http_server("--docs", str(docs), cwd=tmp_path, data_dir=tmp_path / "data", env=env) as srv:
        assert srv.post("/mcp", json={}).status_code == 401
        for config in (s for s in _servers() if "url" in s):
            header = config["headers"]["Authorization"]
            header = header.replace("${env:KNOWHUB_TOKEN}", "laptop-secret")
            header = header.replace("YOUR_TOKEN", "ci-secret")
            token = header.removeprefix("Bearer ")
            assert config["url"].endswith("/mcp")
            async with srv.client("/mcp", token=token) as client:
                assert "query_knowledge_hub" in {t.name for t in (await client.list_tools()).tools}


@pytest.mark.anyio
async def test_the_serve_commands_start(tmp_path: Path) -> None:
    commands = [shlex.split(line.split("#")[0]) for line in _blocks("sh")[0].splitlines()]
    assert [c[:3] for c in commands] == [["knowhub", "serve", "mcp"]] * 3
    (tmp_path / "notes").mkdir()
    (tmp_path / "projects").mkdir()
    data = ["--data-dir", str(tmp_path / "data")]
    for command in commands:
        args = [a.replace("~/", f"{tmp_path}/") for a in command[1:]]
        if "--transport" not in args:
            async with Client(stdio_params(*data, *args, cwd=tmp_path)) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                assert listed == set(await local_tools(tmp_path / "listed"))
            continue
        for option in ("--transport", "--port"):  # http_server chooses them
            if option in args:
                i = args.index(option)
                del args[i : i + 2]
        with http_server(*args[2:], cwd=tmp_path, data_dir=tmp_path / "data") as srv:
            assert srv.get("/health").json()["status"] == "ok"
