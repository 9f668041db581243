"""The tools of one chat, under the names the model sees: ``SERVER__TOOL``.

Every server's tools share one namespace on the model's side, so each name is prefixed with
its server's (``knowhub__search``, ``files__read_text_file``) and made to fit the pattern
the strictest provider accepts (OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``); the schema is passed
as the server gave it. Calling a tool never raises: a name the model made up, arguments
that are not a JSON object, or a tool that fails become an error result the model reads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from knowhub.agent.mcp_pool import ToolOutcome
from knowhub.errors import KnowhubError
from knowhub.providers.llms.tools import ToolCall, ToolSpec

__all__ = ["Tool", "Toolbox", "model_name", "parse_arguments"]

log = logging.getLogger("knowhub.agent")

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64


@dataclass(frozen=True)
class Tool:
    """A tool of ``server`` (``name``: the server's own name for it); ``read_only`` when it
    changes nothing (its server says so), so that the same call may be answered again."""

    server: str
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any]], ToolOutcome] = field(compare=False, repr=False)
    read_only: bool = False


class Toolbox:
    """The tools offered to the model, by the name it calls them."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self._tools[self._unique(model_name(tool.server, tool.name))] = tool

    def specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(name, f"[{t.server}] {t.description}".strip(), t.parameters)
            for name, t in self._tools.items()
        ]

    def find(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def run(self, call: ToolCall) -> ToolOutcome:
        """Run ``call``; whatever goes wrong is the result's error, for the model to read."""
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolOutcome(f"there is no tool {call.name!r}; the tools: {known}", True)
        arguments, problem = parse_arguments(call.arguments)
        if arguments is None:
            return ToolOutcome(problem or "invalid arguments", True)
        try:
            return tool.run(arguments)
        except KnowhubError as exc:
            return ToolOutcome(str(exc), True)
        except Exception as exc:  # a tool's bug is the model's failed call, not the chat's end
            log.error("tool %s/%s failed", tool.server, tool.name, exc_info=exc)
            return ToolOutcome(f"{tool.server}/{tool.name} failed: {exc!r}", True)

    def _unique(self, name: str) -> str:
        unique, n = name, 2
        while unique in self._tools:
            suffix = f"_{n}"
            unique, n = name[: _MAX_NAME - len(suffix)] + suffix, n + 1
        return unique


def model_name(server: str, tool: str) -> str:
    """``server__tool``, with what the providers reject replaced, within 64 characters (a
    long name keeps a hash of the whole, so two long names stay apart)."""
    name = _UNSAFE.sub("_", f"{server}__{tool}")
    if len(name) > _MAX_NAME:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = name[: _MAX_NAME - 9] + "_" + digest
    return name


def parse_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The call's arguments as an object, or None and what the model must fix."""
    if not text.strip():
        return {}, None  # some models send "" for a tool without parameters
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, (
            f"the arguments are not valid JSON ({exc}): call the tool again with a JSON object "
            "matching its schema"
        )
    if not isinstance(value, dict):
        return None, (
            f"the arguments must be a JSON object, got {type(value).__name__}: call the tool "
            "again with an object matching its schema"
        )
    return value, None
