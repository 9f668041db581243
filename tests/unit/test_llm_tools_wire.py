"""The scripted server rejects a tool conversation as the real servers do, in their words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from knowhub.testing.llm_tools_wire import (
    ToolReply,
    call_frames,
    invalid_conversation,
    no_tools,
    split_reply,
)

USER = {"role": "user", "content": "What time is it?"}
TOOL = {"type": "function", "function": {"name": "get_time", "description": "The time"}}


def asked(*ids: str, content: str | None = None) -> dict[str, Any]:
    """An assistant message calling get_time once per id."""
    calls = [
        {"id": i, "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
        for i in ids
    ]
    return {"role": "assistant", "content": content, "tool_calls": calls}


def result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "12:00"}


def openai(*messages: dict[str, Any], **body: Any) -> str | None:
    return invalid_conversation("openai", {"messages": list(messages), "tools": [TOOL], **body})


def test_a_well_formed_tool_conversation_is_taken() -> None:
    assert openai(USER, asked("call_a", "call_b"), result("call_b"), result("call_a")) is None
    assert openai(USER, asked("call_a", content="Checking."), result("call_a"), USER) is None
    assert openai(USER, tool_choice="none") is None


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (
            [USER, result("call_a")],
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
            "message with 'tool_calls'.",
        ),
        (
            [USER, asked("call_a"), result("call_z")],
            "Invalid parameter: 'tool_call_id' of 'call_z' not found in 'tool_calls' of "
            "previous message.",
        ),
        (
            [USER, asked("call_a", "call_b"), result("call_a"), USER],
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            "response messages: call_b",
        ),
        (
            [USER, asked("call_a")],
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            "response messages: call_a",
        ),
        (
            [USER, {"role": "assistant", "content": None}],
            "Missing required parameter: 'messages[1].content'.",
        ),
        (
            [USER, {"role": "tool", "content": "12:00"}],
            "Missing required parameter: 'messages[1].tool_call_id'.",
        ),
        (
            [{"role": "robot", "content": "hi"}],
            "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', "
            "'function', 'tool', and 'developer'.",
        ),
        (
            [USER, {**asked("call_a"), "tool_calls": []}],
            "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum "
            "length 1, but got an empty array instead.",
        ),
    ],
)
def test_openai_rejects_a_broken_conversation(messages: list[Any], message: str) -> None:
    assert openai(*messages) == message


def test_openai_wants_call_arguments_as_text() -> None:
    call = asked("call_a")
    call["tool_calls"][0]["function"]["arguments"] = {}
    assert openai(USER, call, result("call_a")) == (
        "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, "
        "but got an object instead."
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"tools": [{"type": "function", "function": {"name": "get time"}}]},
            "Invalid 'tools[0].function.name': string does not match pattern. Expected a "
            "string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "x" * 65}}]},
            "Invalid 'tools[0].function.name': string too long. Expected a string with "
            "maximum length 64, but got a string with length 65 instead.",
        ),
        (
            {"tools": [{"type": "function", "function": {}}]},
            "Missing required parameter: 'tools[0].function.name'.",
        ),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]},
            "Invalid type for 'tools[0].function.parameters': expected an object, but got a "
            "string instead.",
        ),
        (
            {"tools": []},
            "Invalid 'tools': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.",
        ),
        (
            {"tools": None, "tool_choice": "auto"},
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
        ),
        (
            {"tool_choice": "always"},
            "Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.",
        ),
    ],
)
def test_openai_rejects_malformed_tools(body: dict[str, Any], message: str) -> None:
    assert openai(USER, **body) == message


def ollama(*messages: dict[str, Any], **body: Any) -> str | None:
    return invalid_conversation("ollama", {"messages": list(messages), **body})


def test_ollama_takes_object_arguments_and_results_by_name() -> None:
    call = {"function": {"name": "get_time", "arguments": {}}}
    answered = {"role": "tool", "content": "12:00", "tool_name": "get_time"}
    assistant = {"role": "assistant", "content": "", "tool_calls": [call]}
    assert ollama(USER, assistant, answered, tools=[TOOL]) is None


def test_ollama_rejects_arguments_that_are_not_objects() -> None:
    call = {"function": {"name": "get_time", "arguments": "{}"}}
    assert ollama(USER, {"role": "assistant", "content": "", "tool_calls": [call]}) == (
        "json: cannot unmarshal string into Go struct field "
        "ToolCallFunction.messages.tool_calls.function.arguments of type "
        "api.ToolCallFunctionArguments"
    )


@pytest.mark.parametrize(
    ("protocol", "model", "said"),
    [
        ("ollama", "gemma2", "registry.ollama.ai/library/gemma2:latest does not support tools"),
        ("ollama", "me/m:2b", "registry.ollama.ai/me/m:2b does not support tools"),
        (
            "openai",
            "m",
            '"auto" tool choice requires --enable-auto-tool-choice and '
            "--tool-call-parser to be set",
        ),
        ("azure", "m", "Unsupported parameter: 'tools' is not supported with this model."),
    ],
)
def test_a_server_without_tool_support_answers_400(protocol: str, model: str, said: str) -> None:
    status, body = no_tools(protocol, {"model": model})
    error = body["error"]
    assert status == 400 and (error if protocol == "ollama" else error["message"]) == said


def test_streamed_arguments_are_split_in_three() -> None:
    call = ToolReply("search", {"query": "backups every six hours"})
    sent = call_frames("openai", lambda delta: json.dumps(delta).encode(), [("call_1", call)])
    deltas = [json.loads(frame)["tool_calls"][0] for frame, _ in sent]
    assert [token for _, token in sent] == [False, True, True, True]
    assert deltas[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": ""},
    }
    pieces = [d["function"]["arguments"] for d in deltas[1:]]
    assert all(pieces) and "".join(pieces) == json.dumps(call.arguments)


def test_a_script_returns_text_or_text_and_calls() -> None:
    call = ToolReply("get_time", {})
    assert split_reply("hi") == ("hi", [])
    assert split_reply(["Let me check. ", call]) == ("Let me check. ", [call])
    with pytest.raises(TypeError, match="not"):
        split_reply([{"name": "get_time"}])  # type: ignore[list-item]
