"""The tool-turn contract of the LLM base, the stream decoding of tool calls, and how a
server's refusal of tools is recognised."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from knowhub.errors import ProviderError
from knowhub.providers.jsonhttp import HTTPStatusError, Transport
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.llms.openai import ChatCompletionsLLM
from knowhub.providers.llms.tools import ModelTurn, ToolCall, ToolSpec, tools_refused

QUESTION = [ChatMessage("user", "What time is it?")]
CLOCK = ToolSpec("get_time", "The time now")
CALL = ToolCall("call_1", "get_time", "{}")


class Scripted(LLM):
    """A model whose tool turn yields ``items`` (raising one that is an exception)."""

    model_id = "test:scripted"

    def __init__(self, *items: object) -> None:
        self.items = items

    def _complete(self, messages: Any, **kwargs: Any) -> str:
        raise NotImplementedError

    def _stream(self, messages: Any, **kwargs: Any) -> Iterator[str]:
        raise NotImplementedError

    def _tool_turn(self, messages: Any, tools: Any, **kwargs: Any) -> Iterator[Any]:
        for item in self.items:
            if isinstance(item, Exception):
                raise item
            yield item


def test_deltas_pass_through_and_the_turn_comes_last() -> None:
    llm = Scripted("It is ", "", "noon.", ModelTurn("It is noon.", (CALL,), "stop"))
    items = list(llm.tool_turn(QUESTION, [CLOCK], stream=True))
    assert items == ["It is ", "noon.", ModelTurn("It is noon.", (CALL,), "stop")]


@pytest.mark.parametrize(
    ("items", "stream", "message"),
    [
        ((KeyError("choices"),), False, r"llm test:scripted failed: KeyError\('choices'\)"),
        ((ModelTurn("a"), "b"), True, r"gave 'b' after its turn"),
        ((ModelTurn("a"), ModelTurn("b")), False, r"after its turn"),
        (("a", ModelTurn("a")), False, r"streamed 'a' unasked"),
        ((42,), False, r"gave 42, not text or a turn"),
        (("a",), True, r"ended its turn without an answer"),
        ((ModelTurn(" ", (), "length"),), False, r"empty answer \(finish_reason 'length'\)"),
    ],
)
def test_a_turn_that_breaks_the_contract_is_a_provider_error(
    items: tuple[object, ...], stream: bool, message: str
) -> None:
    with pytest.raises(ProviderError, match=message):
        list(Scripted(*items).tool_turn(QUESTION, [CLOCK], stream=stream))


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


def decoded(*lines: bytes) -> list[str | ModelTurn]:
    llm = ChatCompletionsLLM(
        "http://127.0.0.1:9/chat/completions", "m", {}, Transport("llm t"), model_id="t:m"
    )
    stream = b"".join([*lines, b"data: [DONE]\n\n"])
    return list(llm._events(iter(stream.splitlines(keepends=True))))  # lines, as read


def test_a_new_id_at_a_reused_index_is_a_new_call() -> None:
    # Ollama's /v1 gives each call of a parallel batch index 0, each with its own id.
    first = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_time"}}
    second = {"index": 0, "id": "call_b", "type": "function", "function": {"name": "search"}}
    turn = decoded(
        chunk({"tool_calls": [{**first, "function": {"name": "get_time", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{**second, "function": {"name": "search", "arguments": '{"q"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "x"}'}}]}),
        chunk({}, "tool_calls"),
    )[-1]
    assert isinstance(turn, ModelTurn)
    assert turn.tool_calls == (
        ToolCall("call_a", "get_time", "{}"),
        ToolCall("call_b", "search", '{"q": "x"}'),
    )


def test_a_streamed_call_without_arguments_or_id_gets_defaults() -> None:
    turn = decoded(
        chunk({"tool_calls": [{"index": 0, "function": {"name": "get_time"}}]}),
        chunk({}, "tool_calls"),
    )[-1]
    assert turn == ModelTurn("", (ToolCall("call_0", "get_time", "{}"),), "tool_calls")


@pytest.mark.parametrize(
    ("delta", "message"),
    [
        ({"tool_calls": {"index": 0}}, "delta tool_calls is"),
        ({"tool_calls": [{"index": 0, "function": {"arguments": 5}}]}, "not a tool call delta"),
        ({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "without a name"),
    ],
)
def test_a_malformed_streamed_call_is_an_error(delta: dict[str, Any], message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        decoded(chunk(delta), chunk({}, "tool_calls"))


@pytest.mark.parametrize(
    "detail",
    [
        "registry.ollama.ai/library/gemma2:2b does not support tools",
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        "Unsupported parameter: 'tools' is not supported with this model.",
        "Unrecognized request argument supplied: tools",
        "tools param requires --jinja flag",
    ],
)
def test_servers_refusing_tools_are_recognised(detail: str) -> None:
    error = tools_refused("llm x", "m1", HTTPStatusError(f"HTTP 400: {detail}", 400, detail))
    assert str(error) == (
        f"llm x: model m1 does not support tool calling (the server said: {detail}); "
        "pick a model with tool support"
    )


@pytest.mark.parametrize(
    ("status", "detail"),
    [
        (400, "Invalid 'tools[0].function.name': string does not match pattern."),
        (400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding"),
        (500, "registry.ollama.ai/library/gemma2:2b does not support tools"),
    ],
)
def test_other_errors_are_left_as_they_are(status: int, detail: str) -> None:
    original = HTTPStatusError(f"HTTP {status}: {detail}", status, detail)
    assert tools_refused("llm x", "m1", original) is original
