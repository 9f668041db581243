"""Native tool calling, provider-neutral: what a model is offered, what it asks for, and
the conversation that carries tool results back to it.

A tool-calling conversation is a list of :data:`TurnMessage`: plain
:class:`~knowhub.providers.llms.base.ChatMessage` turns, the assistant turns that asked for
tools (:class:`ToolCallsMessage`, replayed as the model sent them) and one
:class:`ToolResultMessage` per call. Each provider writes them in its own wire format;
the helpers here are what the providers share: checking a turn's arguments
(:func:`checked_turn`), reading a call's arguments and id as servers send them, and
recognising a server that refuses tools (:func:`tools_refused`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from knowhub.errors import ProviderError, QueryError
from knowhub.providers.jsonhttp import HTTPStatusError
from knowhub.providers.llms.messages import ChatMessage

__all__ = [
    "TOOL_NAME",
    "ModelTurn",
    "ToolCall",
    "ToolCallsMessage",
    "ToolChoice",
    "ToolResultMessage",
    "ToolSpec",
    "TurnMessage",
    "arguments_text",
    "call_id",
    "checked_turn",
    "tools_refused",
]

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool names OpenAI accepts (the strictest of the providers)."""

ToolChoice = Literal["auto", "none"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model is offered it: ``parameters`` is its JSON Schema, as given."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise QueryError(f"tool name {self.name!r} must match {TOOL_NAME.pattern}")

    def to_dict(self) -> dict[str, Any]:
        """The ``{"type": "function", "function": {…}}`` object of the OpenAI and Ollama APIs."""
        function = {"name": self.name, "description": self.description}
        return {"type": "function", "function": {**function, "parameters": self.parameters}}


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the JSON text the model wrote, kept
    as written: it may be invalid, and the caller answers that as a tool error."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelTurn:
    """What one model call gave: text, tool calls, or both."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None


@dataclass(frozen=True)
class ToolCallsMessage:
    """The assistant turn that asked for ``calls`` (with any text it wrote alongside)."""

    text: str
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class ToolResultMessage:
    """The result of ``call``, as the text the model reads (an error reads as text too)."""

    call: ToolCall
    content: str


TurnMessage = ChatMessage | ToolCallsMessage | ToolResultMessage


def checked_turn(
    messages: Sequence[TurnMessage], tools: Sequence[ToolSpec], tool_choice: object
) -> tuple[list[TurnMessage], list[ToolSpec]]:
    """The arguments of a tool turn as lists, or a QueryError saying which one is wrong."""
    checked = list(messages)
    if not checked:
        raise QueryError("an LLM call needs at least one message")
    for message in checked:
        if not isinstance(message, ChatMessage | ToolCallsMessage | ToolResultMessage):
            raise QueryError(
                "messages must be ChatMessage, ToolCallsMessage or ToolResultMessage objects, "
                f"got {type(message)}"
            )
    offered = list(tools)
    for tool in offered:
        if not isinstance(tool, ToolSpec):
            raise QueryError(f"tools must be ToolSpec objects, got {type(tool)}")
    if tool_choice not in get_args(ToolChoice):
        raise QueryError(f"tool_choice must be 'auto' or 'none', got {tool_choice!r}")
    return checked, offered


def arguments_text(what: str, value: object) -> str:
    """A call's arguments as a server sent them, as :attr:`ToolCall.arguments`: text kept
    as written; an object (Ollama's way) written out; none (absent, null or "", as some
    servers send for a tool without parameters) is ``{}``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return "{}"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise ProviderError(f"{what}: tool call arguments are {str(value)[:300]!r}, not JSON text")


def call_id(given: object, n: int) -> str:
    """The id a server gave call ``n`` of a turn, or ``call_<n>`` (Ollama gives none)."""
    return given if isinstance(given, str) and given else f"call_{n}"


# How servers say a model (or the server itself) cannot call tools: Ollama ("… does not
# support tools"), vLLM without its tool parser ("\"auto\" tool choice requires
# --enable-auto-tool-choice …"), OpenAI and Azure for a model without them ("Unsupported
# parameter: 'tools' is not supported with this model."; older Azure API versions:
# "Unrecognized request argument supplied: tools"), llama.cpp without --jinja ("tools
# param requires --jinja").
_NO_TOOLS = re.compile(
    r"does not support tool|tools?'? (?:are|is) not supported|tool choice requires"
    r"|enable-auto-tool-choice|unrecognized request argument supplied: tool"
    r"|tools param requires",
    re.IGNORECASE,
)


def tools_refused(what: str, model: str, error: HTTPStatusError) -> ProviderError:
    """``error`` said in words a user can act on when it is a server refusing tools for
    ``model`` (an HTTP 400 saying so); otherwise ``error`` itself."""
    if error.status != 400 or not _NO_TOOLS.search(error.detail):
        return error
    return ProviderError(
        f"{what}: model {model} does not support tool calling (the server said: "
        f"{error.detail}); pick a model with tool support"
    )
