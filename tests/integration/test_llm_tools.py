"""Native tool calling of the chat-model providers, against the scripted server over HTTP."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from knowhub.errors import ProviderError, QueryError
from knowhub.providers.jsonhttp import sse_data
from knowhub.providers.llms.azure import AzureChat
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.llms.ollama import OllamaChat
from knowhub.providers.llms.openai import OpenAIChat
from knowhub.providers.llms.tools import (
    ModelTurn,
    ToolCall,
    ToolCallsMessage,
    ToolResultMessage,
    ToolSpec,
    TurnMessage,
)
from knowhub.testing import llm_server
from knowhub.testing.llm_server import LlmServer, ToolReply
from tests.helpers import WAIT_S

PROVIDERS = ["openai", "azure", "ollama"]
STREAMED = [False, True]
KEY = "sk-test-0123456789abcdef"
MODEL = "qwen2.5:7b-instruct"
DEPLOYMENT = "gpt-4o-mini-prod"
SEARCH = ToolSpec(
    "search_docs",
    "Search the knowledge base",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
CLOCK = ToolSpec("get_time", "The time now")
QUESTION: list[TurnMessage] = [
    ChatMessage("system", "Answer from the knowledge base; search it first."),
    ChatMessage("user", "How often are database backups taken?"),
]
ANSWER = "Backups are taken every six hours [1]."


def build(provider: str, server: LlmServer, **options: Any) -> LLM:
    options = {"max_retries": 2, "backoff_s": 0.001, "timeout_s": WAIT_S, **options}
    if provider == "openai":
        return OpenAIChat(server.openai_base, MODEL, api_key=KEY, **options)
    if provider == "azure":
        return AzureChat(server.url, DEPLOYMENT, api_key=KEY, **options)
    return OllamaChat(server.url, MODEL, api_key=KEY, **options)


def turn_of(
    llm: LLM, stream: bool, messages: list[TurnMessage] = QUESTION, **kwargs: Any
) -> tuple[list[str], ModelTurn]:
    """The text deltas and the turn, checking the turn comes once, last."""
    items = list(llm.tool_turn(messages, [SEARCH, CLOCK], stream=stream, **kwargs))
    *deltas, turn = items
    assert isinstance(turn, ModelTurn) and all(isinstance(d, str) for d in deltas), items
    return [d for d in deltas if isinstance(d, str)], turn


def calling(*replies: str | ToolReply) -> llm_server.Script:
    """A model that makes these calls, then answers once it has the results."""

    def script(body: dict[str, Any]) -> llm_server.Reply:
        return ANSWER if body["messages"][-1]["role"] == "tool" else list(replies)

    return script


# --- calls come back ---


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_single_call_comes_back_as_a_tool_call(provider: str, stream: bool) -> None:
    with llm_server.serve(
        script=calling(ToolReply("search_docs", {"query": "backups"})), api_key=KEY
    ) as server:
        deltas, turn = turn_of(build(provider, server), stream)
    assert deltas == [] and turn.text == ""
    assert turn.tool_calls == (ToolCall("call_0", "search_docs", '{"query": "backups"}'),)
    assert turn.finish_reason == ("stop" if provider == "ollama" else "tool_calls")
    body = server.last.body
    assert body["tools"] == [SEARCH.to_dict(), CLOCK.to_dict()] and body["stream"] is stream
    assert body["tools"][0]["function"]["parameters"]["required"] == ["query"]
    assert body.get("tool_choice") == (None if provider == "ollama" else "auto")


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_calls_in_one_turn_keep_their_order_and_ids(provider: str, stream: bool) -> None:
    replies = (
        ToolReply("search_docs", {"query": "backup schedule"}, id="call_a"),
        ToolReply("get_time", {}, id="call_b"),
    )
    with llm_server.serve(script=calling(*replies)) as server:
        _, turn = turn_of(build(provider, server), stream)
    assert [(c.id, c.name) for c in turn.tool_calls] == [
        ("call_a", "search_docs"),
        ("call_b", "get_time"),
    ]
    assert [json.loads(c.arguments) for c in turn.tool_calls] == [{"query": "backup schedule"}, {}]


@pytest.mark.parametrize("stream", STREAMED)
def test_ollama_calls_without_ids_are_numbered(stream: bool) -> None:
    replies = (ToolReply("search_docs", {"query": "a"}), ToolReply("search_docs", {"query": "b"}))
    with llm_server.serve(script=calling(*replies)) as server:
        _, turn = turn_of(build("ollama", server), stream)
        sent = ollama_calls_sent(server)
    assert [c.id for c in turn.tool_calls] == ["call_0", "call_1"]
    assert len(sent) == 2 and not any("id" in call for call in sent)


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_and_a_call_come_in_one_turn(provider: str, stream: bool) -> None:
    said = "Let me look that up first. "
    with llm_server.serve(
        script=calling(said, ToolReply("search_docs", {"query": "backups"}))
    ) as server:
        deltas, turn = turn_of(build(provider, server), stream)
    assert turn.text == said and [c.name for c in turn.tool_calls] == ["search_docs"]
    assert deltas == (llm_server.tokens(said) if stream else [])


@pytest.mark.parametrize("provider", ["openai", "azure"])
def test_streamed_arguments_arrive_in_pieces_and_are_put_back_together(provider: str) -> None:
    arguments = {"query": "how often are database backups taken", "top_k": 5}
    with llm_server.serve(script=calling(ToolReply("search_docs", arguments))) as server:
        _, turn = turn_of(build(provider, server), stream=True)
        pieces = streamed_argument_pieces(server, provider)
    assert len(pieces) == 3 and all(pieces)
    assert turn.tool_calls[0].arguments == "".join(pieces) == json.dumps(arguments)


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_of_text_only_is_a_turn_too(provider: str, stream: bool) -> None:
    with llm_server.serve(script=lambda body: ANSWER) as server:
        deltas, turn = turn_of(build(provider, server), stream)
    assert turn == ModelTurn(ANSWER, (), "stop")
    assert deltas == (llm_server.tokens(ANSWER) if stream else [])


# --- the conversation goes back ---


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_next_request_carries_the_calls_and_their_results(provider: str, stream: bool) -> None:
    replies = (ToolReply("search_docs", {"query": "backups"}), ToolReply("get_time", {}))
    with llm_server.serve(script=calling("Searching. ", *replies)) as server:
        llm = build(provider, server)
        _, first = turn_of(llm, stream)
        results = [ToolResultMessage(call, f"result of {call.name}") for call in first.tool_calls]
        history = [*QUESTION, ToolCallsMessage(first.text, first.tool_calls), *results]
        _, second = turn_of(llm, stream, history)
    assert second == ModelTurn(ANSWER, (), "stop")
    sent = server.requests[1].body["messages"]
    assert sent[:2] == [m.to_dict() for m in QUESTION if isinstance(m, ChatMessage)]
    if provider == "ollama":
        assert sent[2:] == [
            {
                "role": "assistant",
                "content": "Searching. ",
                "tool_calls": [
                    {"function": {"name": "search_docs", "arguments": {"query": "backups"}}},
                    {"function": {"name": "get_time", "arguments": {}}},
                ],
            },
            {"role": "tool", "content": "result of search_docs", "tool_name": "search_docs"},
            {"role": "tool", "content": "result of get_time", "tool_name": "get_time"},
        ]
        return
    assert sent[2:] == [
        {
            "role": "assistant",
            "content": "Searching. ",
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "search_docs", "arguments": '{"query": "backups"}'},
                },
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "result of search_docs"},
        {"role": "tool", "tool_call_id": "call_1", "content": "result of get_time"},
    ]


@pytest.mark.parametrize("provider", ["openai", "azure"])
def test_a_call_without_text_goes_back_with_null_content(provider: str) -> None:
    call = ToolCall("call_x", "get_time", "{}")
    history = [*QUESTION, ToolCallsMessage("", (call,)), ToolResultMessage(call, "12:00")]
    with llm_server.serve(script=calling()) as server:
        assert turn_of(build(provider, server), False, history)[1].text == ANSWER
    assert server.last.body["messages"][2]["content"] is None


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_choice_none_keeps_the_model_from_calling(provider: str) -> None:
    with llm_server.serve(script=lambda body: ANSWER) as server:
        _, turn = turn_of(build(provider, server), False, tool_choice="none")
    assert turn.text == ANSWER
    if provider == "ollama":  # no tool_choice in Ollama's API: no tools offered
        assert "tools" not in server.last.body and "tool_choice" not in server.last.body
    else:
        assert server.last.body["tool_choice"] == "none" and len(server.last.body["tools"]) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_turn_without_tools_sends_none(provider: str) -> None:
    with llm_server.serve(script=lambda body: ANSWER) as server:
        items = list(build(provider, server).tool_turn(QUESTION, []))
    assert items == [ModelTurn(ANSWER, (), "stop")]
    assert "tools" not in server.last.body and "tool_choice" not in server.last.body


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", ["openai", "azure"])
def test_invalid_json_arguments_come_through_verbatim(provider: str, stream: bool) -> None:
    broken = '{"query": "backups'
    with llm_server.serve(script=calling(ToolReply("search_docs", broken))) as server:
        llm = build(provider, server)
        _, first = turn_of(llm, stream)
        assert first.tool_calls[0].arguments == broken
        history = [
            *QUESTION,
            ToolCallsMessage("", first.tool_calls),
            ToolResultMessage(first.tool_calls[0], "error: arguments are not JSON"),
        ]
        turn_of(llm, stream, history)
    assert server.last.body["messages"][2]["tool_calls"][0]["function"]["arguments"] == broken


def test_ollama_replays_invalid_arguments_as_no_arguments() -> None:
    call = ToolCall("call_0", "search_docs", '{"query": "backups')
    history = [*QUESTION, ToolCallsMessage("", (call,)), ToolResultMessage(call, "error")]
    with llm_server.serve(script=calling()) as server:
        assert turn_of(build("ollama", server), False, history)[1].text == ANSWER
    assert server.last.body["messages"][2]["tool_calls"][0]["function"]["arguments"] == {}


# --- failures ---


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_model_without_tool_support_is_named_with_the_fix(provider: str, stream: bool) -> None:
    with llm_server.serve(script=lambda body: ANSWER, fail="no-tools", times=None) as server:
        llm = build(provider, server)
        with pytest.raises(ProviderError) as error:
            turn_of(llm, stream)
        assert llm.complete(QUESTION[:2]) == ANSWER  # without tools, the model answers
    model = DEPLOYMENT if provider == "azure" else MODEL
    said = {
        "ollama": f"registry.ollama.ai/library/{MODEL} does not support tools",
        "openai": '"auto" tool choice requires --enable-auto-tool-choice',
        "azure": "Unsupported parameter: 'tools' is not supported with this model.",
    }[provider]
    assert str(error.value).startswith(
        f"llm {provider}: model {model} does not support tool calling (the server said: {said}"
    )
    assert str(error.value).endswith("; pick a model with tool support")
    assert len(server.requests) == 2  # a 400 is not retried


def test_an_llm_without_tool_calling_says_which_providers_have_it() -> None:
    class Plain(LLM):
        model_id = "plugin:m"

        def _complete(self, messages: Any, **kwargs: Any) -> str:
            return ANSWER

        def _stream(self, messages: Any, **kwargs: Any) -> Iterator[str]:
            yield ANSWER

    turn = Plain().tool_turn(QUESTION, [SEARCH])
    with pytest.raises(
        ProviderError,
        match=r"llm plugin:m does not support tool calling, "
        r"which `knowhub chat` needs; use llm\.provider openai, azure or ollama",
    ):
        next(turn)


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_turn_is_an_error(provider: str, stream: bool) -> None:
    empty = r"returned an empty answer \(\w+ 'stop'\)"
    with (
        llm_server.serve(script=calling(), fail="empty") as server,
        pytest.raises(ProviderError, match=empty),
    ):
        turn_of(build(provider, server), stream)


@pytest.mark.parametrize("reply", ["text", "call"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_cut_before_its_end_is_an_error(provider: str, reply: str) -> None:
    said = ANSWER if reply == "text" else ToolReply("search_docs", {"query": "backups"})
    cut = r"ended the stream before the answer was (finished|done)"
    with (
        llm_server.serve(script=lambda body: [said], fail="cut") as server,
        pytest.raises(ProviderError, match=cut),
    ):
        turn_of(build(provider, server), True)
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", STREAMED)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failed_turn_is_retried(provider: str, stream: bool) -> None:
    with llm_server.serve(script=calling(ToolReply("get_time", {})), fail="500") as server:
        _, turn = turn_of(build(provider, server), stream)
    assert [c.name for c in turn.tool_calls] == ["get_time"] and len(server.requests) == 2


@pytest.mark.parametrize("provider", ["openai", "azure"])
def test_a_result_without_its_call_is_the_servers_400(provider: str) -> None:
    orphan = ToolResultMessage(ToolCall("call_9", "get_time", "{}"), "12:00")
    with llm_server.serve(script=calling()) as server, pytest.raises(ProviderError) as error:
        turn_of(build(provider, server), False, [*QUESTION, orphan])
    assert "HTTP 400: Invalid parameter: messages with role 'tool' must be a response" in str(
        error.value
    )
    assert "does not support tool calling" not in str(error.value) and len(server.requests) == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda llm: llm.tool_turn([], [SEARCH]),
        lambda llm: llm.tool_turn(QUESTION, [SEARCH], max_tokens=0),
        lambda llm: llm.tool_turn(QUESTION, [SEARCH], temperature=3.0),
        lambda llm: llm.tool_turn([{"role": "user", "content": "hi"}], [SEARCH]),
        lambda llm: llm.tool_turn(QUESTION, [{"name": "search_docs"}]),
        lambda llm: llm.tool_turn(QUESTION, [SEARCH], tool_choice="required"),
    ],
)
def test_bad_arguments_are_query_errors_when_called(call: Any) -> None:
    llm = OpenAIChat(llm_server.closed_url(), "m")
    with pytest.raises(QueryError):
        call(llm)  # not iterated: the error comes before any request


# --- reading what the server sent ---


def ollama_calls_sent(server: LlmServer) -> list[dict[str, Any]]:
    """The tool calls the server sends for the last (Ollama) request, read raw."""
    raw = post(server.url + "/api/chat", server.last.body)
    chunks = [json.loads(line) for line in raw.splitlines() if line.strip()]
    return [c for chunk in chunks for c in chunk.get("message", {}).get("tool_calls") or []]


def streamed_argument_pieces(server: LlmServer, provider: str) -> list[str]:
    """The ``arguments`` deltas of the stream the server sends for the last request."""
    path = server.last.path + ("?api-version=2024-10-21" if provider == "azure" else "")
    raw = post(server.url + path, server.last.body)
    pieces = []
    for data in sse_data(raw.encode().splitlines(keepends=True)):
        if data != "[DONE]":
            for choice in json.loads(data)["choices"]:
                for call in choice["delta"].get("tool_calls") or []:
                    pieces.append(call["function"].get("arguments", ""))
    return [p for p in pieces if p]


def post(url: str, body: Any) -> str:
    headers = {"Content-Type": "application/json", "api-key": KEY, "Authorization": f"Bearer {KEY}"}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=WAIT_S) as response:
        return str(response.read().decode())
