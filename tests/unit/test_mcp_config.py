"""The ``mcpServers`` file: what other clients write is read; each mistake is named with its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from knowhub.agent.mcp_config import ServerConfig, load_mcp_config, parse_mcp_config
from knowhub.agent.mcp_pool import RemoteTool
from knowhub.errors import ConfigError

WHERE = "mcp.json"


def parse(servers: dict[str, Any], **environ: str) -> dict[str, ServerConfig]:
    return parse_mcp_config({"mcpServers": servers}, WHERE, environ=environ)


def error(servers: object, **environ: str) -> str:
    return file_error({"mcpServers": servers}, **environ)


def file_error(data: object, **environ: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_mcp_config(data, WHERE, environ=environ)
    return str(caught.value)


def tool(name: str, *, destructive: bool = False) -> RemoteTool:
    return RemoteTool("s", name, "", {"type": "object"}, read_only=False, destructive=destructive)


def test_claude_desktop_stdio_entry_is_read_with_its_env_and_cwd() -> None:
    servers = parse(
        {
            "fs": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/docs"],
                "env": {"DEBUG": "1"},
                "cwd": "/srv",
            }
        }
    )
    fs = servers["fs"]
    assert (fs.command, fs.args, dict(fs.env), fs.cwd) == (
        "npx",
        ("-y", "@modelcontextprotocol/server-filesystem", "/docs"),
        {"DEBUG": "1"},
        "/srv",
    )
    assert fs.url is None and not fs.disabled and fs.allow is None


def test_http_entry_with_headers_and_other_clients_keys_is_read() -> None:
    servers = parse(
        {
            "wiki": {
                "type": "streamable-http",
                "url": "https://wiki.example/mcp",
                "headers": {"Authorization": "Bearer abc"},
                "alwaysAllow": ["search"],
                "autoApprove": [],
                "timeout": 60,
            },
            "local": {"type": "http", "url": "http://127.0.0.1:8000/mcp"},
            "cli": {"type": "stdio", "command": "server"},
        }
    )
    assert servers["wiki"].url == "https://wiki.example/mcp"
    assert dict(servers["wiki"].headers) == {"Authorization": "Bearer abc"}
    assert servers["local"].url and servers["cli"].command == "server"


def test_knowhub_policy_keys_and_clines_disabled_are_honoured() -> None:
    entry = {
        "command": "s",
        "allow": ["read_*", "list_*"],
        "deny": ["read_secret"],
        "allowDestructive": ["write_notes"],
        "disabled": True,
    }
    s = parse({"s": entry})["s"]
    assert s.allow == ("read_*", "list_*") and s.deny == ("read_secret",)
    assert s.allow_destructive == ("write_notes",) and s.disabled


def test_variables_are_expanded_with_defaults_in_every_string_field() -> None:
    entry = {
        "command": "${BIN}/server",
        "args": ["--root", "${ROOT:-/data}"],
        "env": {"TOKEN": "${TOK}"},
        "cwd": "${HOME_DIR}",
    }
    env = {"BIN": "/opt/bin", "TOK": "t0k3n", "HOME_DIR": "/home/u", "EMPTY": "", "HOST": "h.io"}
    s = parse({"s": entry}, **env)["s"]
    assert (s.command, s.args, dict(s.env), s.cwd) == (
        "/opt/bin/server",
        ("--root", "/data"),
        {"TOKEN": "t0k3n"},
        "/home/u",
    )
    http = parse({"h": {"url": "https://${HOST}/mcp", "headers": {"X": "${EMPTY:-d}"}}}, **env)
    assert http["h"].url == "https://h.io/mcp"
    assert error({"h": {"url": "https://${HOST}/mcp"}}).endswith("or write ${HOST:-default}")
    assert parse({"h": {"url": "https://${H:-x.io}/mcp"}})["h"].url == "https://x.io/mcp"
    assert dict(http["h"].headers) == {"X": "d"}  # ":-" takes the default when set but empty


def test_an_unset_variable_names_file_server_key_and_variable() -> None:
    message = error({"fs": {"command": "npx", "env": {"API_KEY": "${FS_KEY}"}}})
    assert message == (
        "mcp.json: server 'fs': env.API_KEY uses ${FS_KEY}, which is not set; "
        "export FS_KEY or write ${FS_KEY:-default}"
    )


def test_a_set_but_empty_variable_without_default_expands_to_empty() -> None:
    s = parse({"s": {"command": "x", "args": ["a${E}b"]}}, E="")["s"]
    assert s.args == ("ab",)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({}, "mcp.json: server 'fs': give either command (stdio) or url (HTTP)"),
        (
            {"command": "a", "url": "http://h/mcp"},
            "mcp.json: server 'fs': give either command (stdio) or url (HTTP)",
        ),
        ("npx", "mcp.json: server 'fs': expected an object with command (stdio) or url (HTTP)"),
        ({"command": ""}, "mcp.json: server 'fs': command must be a non-empty string, not ''"),
        ({"command": "a", "args": "-y x"}, "mcp.json: server 'fs': args must be a list of strings"),
        ({"command": "a", "env": {"PORT": 80}}, "(quote numbers)"),
        ({"url": "http://h/mcp", "headers": ["X: y"]}, "server 'fs': headers must be an object"),
        ({"url": "ftp://h/mcp"}, "url 'ftp://h/mcp' must start with http:// or https://"),
        ({"command": "a", "disabled": "yes"}, "disabled must be true or false, not 'yes'"),
        (
            {"command": "a", "allow": "read_*"},
            'allow must be a list of tool-name globs, like ["read_*"]',
        ),
        ({"command": "a", "Deny": ["w"]}, "unknown key 'Deny'; did you mean 'deny'?"),
        (
            {"command": "a", "allow_destructive": ["w"]},
            "unknown key 'allow_destructive'; did you mean 'allowDestructive'?",
        ),
        ({"type": "http", "command": "a"}, "type 'http' needs url; drop type or give url"),
        ({"type": "stdio", "url": "http://h/mcp"}, "type 'stdio' needs command"),
        (
            {"type": "websocket", "command": "a"},
            "type 'websocket' is unknown; use 'stdio' or 'http'",
        ),
    ],
)
def test_each_mistake_in_an_entry_names_file_server_key_and_fix(
    entry: object, expected: str
) -> None:
    message = error({"fs": entry})
    assert expected in message and message.startswith("mcp.json: server 'fs': ")


def test_legacy_sse_is_refused_pointing_at_streamable_http() -> None:
    message = error({"old": {"type": "sse", "url": "http://h/sse"}})
    assert message == (
        "mcp.json: server 'old': type 'sse' (the legacy HTTP+SSE transport) is not supported; "
        "use the server's streamable HTTP endpoint (type 'http', usually …/mcp)"
    )


@pytest.mark.parametrize("name", ["my server", "fs.local", "x" * 33, "", "émoji"])
def test_server_names_must_be_usable_in_tool_names(name: str) -> None:
    message = error({name: {"command": "a"}})
    assert message == (
        f"mcp.json: server name {name!r} is unusable in tool names: "
        "use 1-32 letters, digits, '_' or '-'"
    )


def test_knowhub_is_reserved_for_the_built_in_tools() -> None:
    assert "reserved for knowhub's built-in tools" in error({"knowhub": {"command": "a"}})


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], 'expected an object with an "mcpServers" key'),
        ({"servers": {}}, 'expected an object with an "mcpServers" key'),
        ({"mcpServers": []}, "mcpServers must be an object of server name → settings"),
    ],
)
def test_the_file_must_hold_an_mcp_servers_object(data: object, expected: str) -> None:
    message = file_error(data)
    assert message.startswith(f"{WHERE}: ") and expected in message


def test_load_reads_a_file_and_names_it_in_json_errors(tmp_path: Path) -> None:
    good = tmp_path / "mcp.json"
    good.write_text(json.dumps({"mcpServers": {"fs": {"command": "npx"}}}), encoding="utf-8")
    assert load_mcp_config(good)["fs"].command == "npx"
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"fs": {"command": "npx",}}}', encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=r"bad\.json: not valid JSON at line 1, column 41: Expecting property name",
    ):
        load_mcp_config(bad)
    with pytest.raises(ConfigError, match=r"missing\.json: cannot read the MCP servers file"):
        load_mcp_config(tmp_path / "missing.json")


def test_secrets_are_env_and_header_values_and_bare_bearer_tokens() -> None:
    s = ServerConfig(
        name="s",
        env={"API_KEY": "sk-0123456789", "DEBUG": "1"},
        headers={"Authorization": "Bearer tok-abcdefgh"},
    )
    assert s.secrets() == ["Bearer tok-abcdefgh", "sk-0123456789", "tok-abcdefgh"]


def test_refusal_deny_wins_then_allow_then_destructive_needs_its_own_glob() -> None:
    s = ServerConfig(
        name="s",
        command="x",
        allow=("read_*", "write_*"),
        deny=("read_secret",),
        allow_destructive=("write_notes",),
    )
    assert s.refusal(tool("read_file")) is None
    assert s.refusal(tool("read_secret")) == "denied by deny"
    assert s.refusal(tool("delete_all")) == "not in allow"
    assert s.refusal(tool("write_notes", destructive=True)) is None
    assert s.refusal(tool("write_file", destructive=True)) == (
        "destructive (destructiveHint); allow it with allowDestructive"
    )


def test_without_allow_every_tool_but_destructive_ones_is_offered() -> None:
    s = ServerConfig(name="s", command="x")
    assert s.refusal(tool("anything")) is None
    assert s.refusal(tool("wipe", destructive=True)) is not None
    assert (
        ServerConfig(name="s", command="x", allow_destructive=("*",)).refusal(
            tool("wipe", destructive=True)
        )
        is None
    )


def test_what_a_variable_brought_in_is_a_secret_wherever_it_went() -> None:
    entry = {"url": "https://wiki.example/mcp?key=${WIKI_KEY}"}
    (config,) = parse_mcp_config(
        {"mcpServers": {"wiki": entry}}, "mcp.json", environ={"WIKI_KEY": "sk-in-the-url-9"}
    ).values()
    assert config.url == "https://wiki.example/mcp?key=sk-in-the-url-9"
    assert "sk-in-the-url-9" in config.secrets()
