"""Native tool calling in the scripted chat server: the replies a script gives, how each
protocol sends them, and the 400s the real servers give a malformed tool conversation.

Wording of the errors follows what the real servers answer: OpenAI's chat completions
(also Azure's, which relays them), vLLM without its tool parser, and Ollama, whose Go
server rejects what does not unmarshal into its request types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.testing.llm_images_wire import ollama_images, openai_parts

__all__ = [
    "Reply",
    "Script",
    "ToolReply",
    "call_frames",
    "invalid_conversation",
    "no_tools",
    "split_reply",
    "whole_calls",
]

_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
_OPENAI_ROLES = ("system", "user", "assistant", "tool", "developer")
_OLLAMA_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolReply:
    """One tool call the scripted model makes.

    Attributes:
        name: the tool called.
        arguments: an object, or text sent verbatim (so a test can send invalid JSON;
            Ollama, whose arguments are objects, gets the text as a JSON string).
        id: the call's id (None: the server makes one up; Ollama then sends none).
    """

    name: str
    arguments: str | dict[str, Any]
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


Reply = str | Sequence[str | ToolReply]
"""A scripted turn: text, or a list of text pieces (joined, sent first) and tool calls."""

Script = Callable[[dict[str, Any]], Reply]
"""The scripted model: the request body (parsed JSON, in its protocol's format) to a reply."""


def split_reply(reply: Reply) -> tuple[str, list[ToolReply]]:
    """A reply's text and its calls; a TypeError for a script that returned something else."""
    if isinstance(reply, str):
        return reply, []
    texts = [part for part in reply if isinstance(part, str)]
    calls = [part for part in reply if isinstance(part, ToolReply)]
    if len(texts) + len(calls) != len(reply):
        raise TypeError(f"a script returns text or a list of text and ToolReply, not {reply!r}")
    return "".join(texts), calls


# --- sending calls ---


def whole_calls(protocol: str, calls: list[tuple[str, ToolReply]]) -> list[dict[str, Any]]:
    """The ``message.tool_calls`` of an answer that is not streamed; ``calls`` pairs each
    call with its id."""
    return [_call(protocol, n, call_id, call) for n, (call_id, call) in enumerate(calls)]


def call_frames(
    protocol: str, chunk: Callable[[dict[str, Any]], bytes], calls: list[tuple[str, ToolReply]]
) -> list[tuple[bytes, bool]]:
    """The stream frames of ``calls``, each with whether it counts as a token.

    ``chunk`` wraps a delta (OpenAI) or a message (Ollama) into a frame. OpenAI sends a
    call's id and name first, then its arguments text in three pieces; Ollama sends each
    call whole, in a chunk of its own.
    """
    frames: list[tuple[bytes, bool]] = []
    for n, (call_id, call) in enumerate(calls):
        if protocol == "ollama":
            message = {
                "role": "assistant",
                "content": "",
                "tool_calls": [_call(protocol, n, call_id, call)],
            }
            frames.append((chunk(message), True))
            continue
        opening = {"index": n, "id": call_id, "type": "function"}
        opening["function"] = {"name": call.name, "arguments": ""}
        frames.append((chunk({"tool_calls": [opening]}), False))
        for piece in _thirds(call.arguments_text()):
            delta = {"tool_calls": [{"index": n, "function": {"arguments": piece}}]}
            frames.append((chunk(delta), True))
    return frames


def _call(protocol: str, n: int, call_id: str, call: ToolReply) -> dict[str, Any]:
    if protocol != "ollama":
        function = {"name": call.name, "arguments": call.arguments_text()}
        return {"id": call_id, "type": "function", "function": function}
    ollama: dict[str, Any] = {
        "function": {"index": n, "name": call.name, "arguments": call.arguments}
    }
    if call.id is not None:  # newer Ollama versions number their calls
        ollama["id"] = call.id
    return ollama


def _thirds(text: str) -> list[str]:
    """``text`` in up to three pieces, so a client must put arguments back together."""
    size = max(1, -(-len(text) // 3))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- a server that cannot call tools ---


def no_tools(protocol: str, body: dict[str, Any]) -> tuple[int, Any]:
    """The 400 a request with tools gets from a server or model without tool support."""
    if protocol == "ollama":
        model = str(body.get("model", ""))
        name = model if ":" in model else model + ":latest"
        where = "registry.ollama.ai/" + (name if "/" in name else "library/" + name)
        return 400, {"error": f"{where} does not support tools"}
    if protocol == "azure":
        message = "Unsupported parameter: 'tools' is not supported with this model."
        return 400, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "tools",
                "code": "unsupported_parameter",
            }
        }
    message = (
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
    )
    return 400, {
        "error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}
    }


# --- what the real servers reject ---


def invalid_conversation(protocol: str, body: dict[str, Any]) -> str | None:
    """What the real server says of the messages, tools and tool_choice of ``body``, or
    None when it would take them."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list of {role, content}"
    check = _ollama_message if protocol == "ollama" else _openai_message
    for i, message in enumerate(messages):
        problem = check(f"messages[{i}]", message)
        if problem is not None:
            return problem
    if protocol == "ollama":
        return _ollama_tools(body.get("tools"))
    return _openai_order(messages) or _openai_tools(body.get("tools"), body.get("tool_choice"))


def _openai_message(at: str, message: object) -> str | None:
    if not isinstance(message, dict):
        return _expect(at, message, dict, "an object")
    role = message.get("role")
    if role not in _OPENAI_ROLES:
        return _expect(f"{at}.role", role, str, "a string") or (
            f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
            "'function', 'tool', and 'developer'."
        )
    calls = message.get("tool_calls")
    if role == "assistant" and calls is not None:
        problem = _openai_calls(f"{at}.tool_calls", calls)
        if problem is not None or message.get("content") is None:
            return problem  # content may be null when the message calls tools
    if role == "tool" and (
        problem := _expect(f"{at}.tool_call_id", message.get("tool_call_id"), str, "a string")
    ):
        return problem
    if role == "user" and isinstance(message.get("content"), list):
        return openai_parts(f"{at}.content", message["content"])
    return _expect(f"{at}.content", message.get("content"), str, "a string")


def _openai_calls(at: str, calls: object) -> str | None:
    if not isinstance(calls, list):
        return _expect(at, calls, list, "an array")
    if not calls:
        return _empty_array(at)
    for j, call in enumerate(calls):
        where = f"{at}[{j}]"
        if not isinstance(call, dict):
            return _expect(where, call, dict, "an object")
        function = call.get("function")
        problem = _expect(f"{where}.id", call.get("id"), str, "a string") or _expect(
            f"{where}.type", call.get("type"), str, "a string"
        )
        if problem is not None or not isinstance(function, dict):
            return problem or _expect(f"{where}.function", function, dict, "an object")
        if call["type"] != "function":
            return f"Invalid value: '{call['type']}'. Supported values are: 'function'."
        for key in ("name", "arguments"):
            if problem := _expect(f"{where}.function.{key}", function.get(key), str, "a string"):
                return problem
    return None


def _openai_order(messages: list[dict[str, Any]]) -> str | None:
    """Tool messages come right after the assistant message whose calls they answer, one
    for each call, before the conversation goes on."""
    asked: list[str] | None = None  # the call ids of the assistant message answered now
    unanswered: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            answered = message["tool_call_id"]
            if asked is None:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            if answered not in asked:
                return (
                    f"Invalid parameter: 'tool_call_id' of '{answered}' not found in "
                    "'tool_calls' of previous message."
                )
            unanswered = [i for i in unanswered if i != answered]
            continue
        if unanswered:
            return _unanswered(unanswered)
        calls = message.get("tool_calls") if message["role"] == "assistant" else None
        asked = [c["id"] for c in calls] if calls else None
        unanswered = list(asked or [])
    return _unanswered(unanswered) if unanswered else None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(ids)
    )


def _openai_tools(tools: object, choice: object) -> str | None:
    if tools is None:
        if choice is None:
            return None
        return (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
            "are specified."
        )
    if not isinstance(tools, list):
        return _expect("tools", tools, list, "an array")
    if not tools:
        return _empty_array("tools")
    for i, tool in enumerate(tools):
        problem = _openai_tool(f"tools[{i}]", tool)
        if problem is not None:
            return problem
    if (
        choice is not None
        and choice not in ("none", "auto", "required")
        and not isinstance(choice, dict)
    ):
        return f"Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'."
    return None


def _openai_tool(at: str, tool: object) -> str | None:
    if not isinstance(tool, dict):
        return _expect(at, tool, dict, "an object")
    function = tool.get("function")
    problem = _expect(f"{at}.type", tool.get("type"), str, "a string")
    if problem is None and tool["type"] != "function":
        problem = f"Invalid value: '{tool['type']}'. Supported values are: 'function' and 'custom'."
    if problem is not None or not isinstance(function, dict):
        return problem or _expect(f"{at}.function", function, dict, "an object")
    name = function.get("name")
    if not isinstance(name, str):
        return _expect(f"{at}.function.name", name, str, "a string")
    if not _NAME.match(name):
        return (
            f"Invalid '{at}.function.name': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
    if len(name) > 64:
        return (
            f"Invalid '{at}.function.name': string too long. Expected a string with maximum "
            f"length 64, but got a string with length {len(name)} instead."
        )
    for key, kind, word in (("description", str, "a string"), ("parameters", dict, "an object")):
        value = function.get(key)
        if value is not None and (problem := _expect(f"{at}.function.{key}", value, kind, word)):
            return problem
    return None


def _ollama_message(at: str, message: object) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in _OLLAMA_ROLES:
        return "messages must be a non-empty list of {role, content}"
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            return _unmarshal(calls, "ChatRequest.messages.tool_calls", "[]api.ToolCall")
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                return _unmarshal(
                    function, "ToolCall.messages.tool_calls.function", "api.ToolCallFunction"
                )
            if not isinstance(function.get("name"), str):
                return _unmarshal(
                    function.get("name"),
                    "ToolCallFunction.messages.tool_calls.function.name",
                    "string",
                )
            if not isinstance(function.get("arguments"), dict):
                return _unmarshal(
                    function.get("arguments"),
                    "ToolCallFunction.messages.tool_calls.function.arguments",
                    "api.ToolCallFunctionArguments",
                )
    content = message.get("content")
    if isinstance(content, str) or (content is None and calls):
        return ollama_images(message.get("images"))
    return "messages must be a non-empty list of {role, content}"


def _ollama_tools(tools: object) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return _unmarshal(tools, "ChatRequest.tools", "api.Tools")
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return _unmarshal(function, "Tool.tools.function", "api.ToolFunction")
    return None


def _expect(at: str, value: object, kind: type, word: str) -> str | None:
    """OpenAI's words for a missing value or one of the wrong type."""
    if value is None:
        return f"Missing required parameter: '{at}'."
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        return f"Invalid type for '{at}': expected {word}, but got {_kind(value)} instead."
    return None


def _empty_array(at: str) -> str:
    return (
        f"Invalid '{at}': empty array. Expected an array with minimum length 1, but got an "
        "empty array instead."
    )


def _kind(value: object) -> str:
    """A JSON value's type, as OpenAI names it."""
    kinds: tuple[tuple[type, str], ...] = (
        (bool, "a boolean"),
        (int, "an integer"),
        (float, "a decimal"),
        (str, "a string"),
        (list, "an array"),
        (dict, "an object"),
    )
    return next((word for kind, word in kinds if isinstance(value, kind)), "null")


def _unmarshal(value: object, field: str, go_type: str) -> str:
    """Ollama's answer to a value that does not fit its Go request type."""
    kinds = (
        (bool, "bool"),
        (int | float, "number"),
        (str, "string"),
        (list, "array"),
        (dict, "object"),
    )
    kind = next((word for t, word in kinds if isinstance(value, t)), "null")
    return f"json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"
