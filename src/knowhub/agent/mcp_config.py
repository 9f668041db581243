"""The ``mcpServers`` file: which external MCP servers ``knowhub chat`` may start or reach.

The format is the one Claude Desktop, Cursor, Cline and Claude Code write, so a user can point
knowhub at the file they already have::

    {"mcpServers": {
        "fs": {"command": "npx",
               "args": ["-y", "@modelcontextprotocol/server-filesystem", "/docs"]},
        "wiki": {"url": "https://wiki.example/mcp",
                 "headers": {"Authorization": "Bearer ${WIKI_TOKEN}"},
                 "deny": ["delete_*"], "allowDestructive": ["edit_page"]}}}

Their extra keys are accepted: ``type`` (checked against command/url), ``disabled`` (Cline;
honoured), ``alwaysAllow``/``autoApprove`` (ignored: knowhub offers tools by the globs below,
it never asks per call). knowhub's own keys are ``allow``, ``deny`` and ``allowDestructive``,
lists of :func:`fnmatch.fnmatchcase` globs of tool names. ``${VAR}`` and ``${VAR:-default}``
are expanded in command, args, env, cwd, url and headers, as Claude Code does.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from knowhub.errors import ConfigError

if TYPE_CHECKING:
    from knowhub.agent.mcp_pool import RemoteTool

__all__ = ["RESERVED_NAME", "ServerConfig", "load_mcp_config", "parse_mcp_config"]

# Tool names reach the LLM as "<server>__<tool>", and providers accept only these characters.
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,32}$")
RESERVED_NAME = "knowhub"  # the built-in tools' prefix
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STDIO_TYPES = {"stdio"}
_HTTP_TYPES = {"http", "streamable-http", "streamableHttp", "streamable_http"}
_OURS = ("allow", "deny", "allowDestructive")
_KNOWN = {"command", "args", "env", "cwd", "url", "headers", "type", "disabled", *_OURS}
# Secrets shorter than this are not scrubbed: blanking every "1" or "true" of a trace would
# ruin it, and no credential worth hiding is that short.
_MIN_SECRET = 8


@dataclass(frozen=True)
class ServerConfig:
    """One entry of ``mcpServers``: a stdio command or a streamable HTTP URL, and its policy."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    allow_destructive: tuple[str, ...] = ()
    disabled: bool = False
    # What ``${VAR}`` put anywhere in the entry (a key in a URL or an argument, too).
    expanded: tuple[str, ...] = ()

    def secrets(self) -> list[str]:
        """Env and header values (and a header's token after its scheme), and every value a
        ``${VAR}`` brought in: to scrub from traces, notes and errors."""
        found: list[str] = list(self.expanded)
        for value in [*self.env.values(), *self.headers.values()]:
            found.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.isalpha():  # "Bearer abc…": the token also travels alone
                found.append(token.strip())
        return sorted({s for s in found if len(s) >= _MIN_SECRET}, key=len, reverse=True)

    def refusal(self, tool: RemoteTool) -> str | None:
        """Why ``tool`` is not offered to the model, or None to offer it.

        ``deny`` wins over everything; then ``allow`` (when given) must match; then a
        destructive tool needs an ``allowDestructive`` glob as well.
        """
        if _matches(tool.name, self.deny):
            return "denied by deny"
        if self.allow is not None and not _matches(tool.name, self.allow):
            return "not in allow"
        if tool.destructive and not _matches(tool.name, self.allow_destructive):
            return "destructive (destructiveHint); allow it with allowDestructive"
        return None


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, glob) for glob in globs)


def load_mcp_config(
    path: Path, *, environ: Mapping[str, str] | None = None
) -> dict[str, ServerConfig]:
    """Read an ``mcpServers`` JSON file; every problem is a ConfigError naming file and fix.

    ``environ`` supplies ``${VAR}`` values (default: this process's environment).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"{path}: cannot read the MCP servers file ({e.strerror or e}); "
            'give a JSON file like {"mcpServers": {"fs": {"command": "…"}}}'
        ) from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        ) from e
    return parse_mcp_config(data, str(path), environ=environ)


def parse_mcp_config(
    data: object, where: str, *, environ: Mapping[str, str] | None = None
) -> dict[str, ServerConfig]:
    """Turn parsed JSON into servers by name; ``where`` names the source in every error."""
    env = os.environ if environ is None else environ
    if not isinstance(data, dict) or "mcpServers" not in data:
        raise ConfigError(
            f'{where}: expected an object with an "mcpServers" key, '
            'like {"mcpServers": {"fs": {"command": "npx", "args": ["…"]}}}'
        )
    servers = data["mcpServers"]
    if not isinstance(servers, dict):
        raise ConfigError(f"{where}: mcpServers must be an object of server name → settings")
    return {name: _server(name, entry, where, env) for name, entry in servers.items()}


def _server(name: str, entry: object, where: str, environ: Mapping[str, str]) -> ServerConfig:
    if not _NAME.match(name):
        raise ConfigError(
            f"{where}: server name {name!r} is unusable in tool names: use 1-32 letters, "
            "digits, '_' or '-'"
        )
    if name == RESERVED_NAME:
        raise ConfigError(
            f"{where}: server name {name!r} is reserved for knowhub's built-in tools; rename it"
        )
    ctx = f"{where}: server {name!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{ctx}: expected an object with command (stdio) or url (HTTP)")
    _check_keys(entry, ctx)
    get = _Reader(entry, ctx, environ)
    command, url = get.text("command"), get.text("url")
    _check_transport(entry, command, url, ctx)
    return ServerConfig(
        name=name,
        command=command,
        args=tuple(get.texts("args") or ()),
        env=get.mapping("env"),
        cwd=get.text("cwd"),
        url=url,
        headers=get.mapping("headers"),
        allow=get.globs("allow"),
        deny=get.globs("deny") or (),
        allow_destructive=get.globs("allowDestructive") or (),
        disabled=get.flag("disabled"),
        expanded=tuple(get.expanded),
    )


def _check_keys(entry: dict[str, object], ctx: str) -> None:
    """Other clients' keys pass; a near miss of one of ours is a typo that would loosen nothing."""
    for key in entry:
        if key in _KNOWN:
            continue
        ours = {k.lower(): k for k in _OURS}
        close = difflib.get_close_matches(key.lower(), ours, n=1, cutoff=0.8)
        if close:
            raise ConfigError(f"{ctx}: unknown key {key!r}; did you mean {ours[close[0]]!r}?")


def _check_transport(
    entry: dict[str, object], command: str | None, url: str | None, ctx: str
) -> None:
    if (command is None) == (url is None):
        raise ConfigError(f"{ctx}: give either command (stdio) or url (HTTP)")
    kind = entry.get("type")
    if kind is None:
        pass
    elif kind == "sse":
        raise ConfigError(
            f"{ctx}: type 'sse' (the legacy HTTP+SSE transport) is not supported; "
            "use the server's streamable HTTP endpoint (type 'http', usually …/mcp)"
        )
    elif kind in _STDIO_TYPES and command is None:
        raise ConfigError(f"{ctx}: type {kind!r} needs command; drop type or give command")
    elif kind in _HTTP_TYPES and url is None:
        raise ConfigError(f"{ctx}: type {kind!r} needs url; drop type or give url")
    elif kind not in _STDIO_TYPES | _HTTP_TYPES:
        raise ConfigError(f"{ctx}: type {kind!r} is unknown; use 'stdio' or 'http' (or drop it)")
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{ctx}: url {url!r} must start with http:// or https://")


@dataclass(frozen=True)
class _Reader:
    """Typed, expanded values of one server entry; each error names the key."""

    entry: dict[str, object]
    ctx: str
    environ: Mapping[str, str]
    expanded: list[str] = field(default_factory=list)

    def text(self, key: str) -> str | None:
        value = self.entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{self.ctx}: {key} must be a non-empty string, not {value!r}")
        return self._expand(value, key)

    def texts(self, key: str) -> list[str] | None:
        value = self.entry.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{self.ctx}: {key} must be a list of strings, not {value!r}")
        return [self._expand(v, key) for v in value]

    def globs(self, key: str) -> tuple[str, ...] | None:
        value = self.entry.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(
                f"{self.ctx}: {key} must be a list of tool-name globs, "
                f'like ["read_*"], not {value!r}'
            )
        return tuple(value)

    def mapping(self, key: str) -> dict[str, str]:
        value = self.entry.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigError(
                f'{self.ctx}: {key} must be an object of string values, like {{"NAME": "value"}} '
                "(quote numbers)"
            )
        return {k: self._expand(v, f"{key}.{k}") for k, v in value.items()}

    def flag(self, key: str) -> bool:
        value = self.entry.get(key, False)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.ctx}: {key} must be true or false, not {value!r}")
        return value

    def _expand(self, value: str, key: str) -> str:
        def one(match: re.Match[str]) -> str:
            var, default = match.group(1), match.group(2)
            found = self.environ.get(var)
            if found:
                self.expanded.append(found)
                return found
            if default is not None:  # shell's ":-": unset or empty takes the default
                return default
            if found is not None:
                return found
            raise ConfigError(
                f"{self.ctx}: {key} uses ${{{var}}}, which is not set; export {var} "
                f"or write ${{{var}:-default}}"
            )

        return _VAR.sub(one, value)
