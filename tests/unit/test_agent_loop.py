"""The chat's tool loop, against a deterministic model: what it feeds back, how it bounds a
model that misbehaves. (The real wire formats and real MCP servers: tests/integration.)"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from knowhub.agent.events import ChatEnd, ChatEvent, ChatToken, StepDone, ToolCalled, ToolDone
from knowhub.agent.loop import Limits, run_turn
from knowhub.agent.mcp_pool import ToolOutcome
from knowhub.agent.sources import SourceBook
from knowhub.agent.toolbox import Tool, Toolbox, model_name
from knowhub.errors import QueryError
from knowhub.models import Hit
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.llms.tools import (
    ModelTurn,
    ToolCall,
    ToolCallsMessage,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    TurnMessage,
)
from knowhub.testing.hits import hit as make_hit

Reply = Callable[[list[TurnMessage], ToolChoice], ModelTurn]


class ScriptedModel(LLM):
    """Answers each turn with the next reply of ``script``; records what it was sent."""

    def __init__(self, *script: ModelTurn | Reply) -> None:
        self.model_id = "scripted:test"
        self.script = list(script)
        self.seen: list[tuple[list[TurnMessage], list[ToolSpec], ToolChoice]] = []

    def _complete(self, *args: Any, **kwargs: Any) -> str:
        raise AssertionError("the loop uses tool_turn only")

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        raise AssertionError("the loop uses tool_turn only")

    def _tool_turn(
        self,
        messages: list[TurnMessage],
        tools: list[ToolSpec],
        *,
        stream: bool,
        tool_choice: ToolChoice,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str | ModelTurn]:
        self.seen.append((list(messages), list(tools), tool_choice))
        reply = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        turn = reply(messages, tool_choice) if callable(reply) else reply
        if stream and turn.text:
            yield from re.findall(r"\S+\s*", turn.text)
        yield turn


def call(name: str, arguments: Any, n: int = 1) -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(f"call_{n}", name, text)


def asks(*calls: ToolCall) -> ModelTurn:
    return ModelTurn("", calls, "tool_calls")


def says(text: str) -> ModelTurn:
    return ModelTurn(text, (), "stop")


def hit(n: int) -> Hit:
    return make_hit(
        f"backups run every {n} hours",
        chunk_id=f"chunk{n}",
        source=f"docs/d{n}.md",
        title=f"Doc {n}",
        section_path="Ops",
        line_end=2,
        char_end=10,
        doc_hash=f"hash{n}",
    )


def echo_tools(calls: list[dict[str, Any]], sources: SourceBook) -> Toolbox:
    def echo(args: dict[str, Any]) -> ToolOutcome:
        calls.append(args)
        return ToolOutcome(f"echo: {args.get('text', '')}")

    def search(args: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome("\n".join(f"[{sources.number(hit(n))}] Doc {n}" for n in (1, 2)))

    def broken(args: dict[str, Any]) -> ToolOutcome:
        raise RuntimeError("the tool's own bug")

    def refuses(args: dict[str, Any]) -> ToolOutcome:
        raise QueryError("path must be inside /allowed")

    def big(args: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome("x" * int(args["n"]))

    def write(args: dict[str, Any]) -> ToolOutcome:
        calls.append({"wrote": args})
        return ToolOutcome("written")

    def leaks(args: dict[str, Any]) -> ToolOutcome:
        return ToolOutcome("could not start: stderr says token=hunter2", True)

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return Toolbox(
        Tool(server, name, f"the {name} tool", schema, run, read_only=name != "write")
        for server, name, run in [
            ("files", "echo", echo),
            ("knowhub", "search", search),
            ("files", "broken", broken),
            ("files", "refuses", refuses),
            ("files", "big", big),
            ("files", "write", write),
            ("files", "leaks", leaks),
        ]
    )


def run(
    model: ScriptedModel,
    limits: Limits | None = None,
    scrub: Any = None,
    stream: bool = False,
) -> tuple[list[ChatEvent], list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    sources = SourceBook()
    events = run_turn(
        "what do the backups do?",
        llm=model,
        toolbox=echo_tools(calls, sources),
        sources=sources,
        system="use the tools",
        limits=limits or Limits(),
        history=[ChatMessage("user", "hi"), ChatMessage("assistant", "hello")],
        stream=stream,
        **({"scrub": scrub} if scrub else {}),
    )
    return list(events), calls


def end_of(events: list[ChatEvent]) -> Any:
    assert isinstance(events[-1], ChatEnd)
    return events[-1].answer


def test_a_tool_result_goes_back_to_the_model_and_the_answer_follows() -> None:
    model = ScriptedModel(asks(call("files__echo", {"text": "log line 7"})), says("It says 7."))
    events, calls = run(model)
    kinds = [type(e) for e in events]
    assert kinds == [StepDone, ToolCalled, ToolDone, StepDone, ChatEnd]
    assert calls == [{"text": "log line 7"}]
    second, tools, _ = model.seen[1]
    assert [type(m) for m in second] == [
        ChatMessage,
        ChatMessage,
        ChatMessage,
        ChatMessage,
        ToolCallsMessage,
        ToolResultMessage,
    ]
    result = second[-1]
    assert isinstance(result, ToolResultMessage) and result.content == "echo: log line 7"
    assert result.call.id == "call_1"
    assert "files__echo" in [t.name for t in tools]
    end = end_of(events)
    assert end.answer == "It says 7." and end.stopped == "answer" and end.model_calls == 2
    done = end.steps[0]
    assert (done.server, done.tool, done.arguments, done.error) == (
        "files",
        "echo",
        {"text": "log line 7"},
        None,
    )
    assert done.result_chars == len("echo: log line 7")


def test_two_calls_in_one_turn_run_in_order() -> None:
    both = asks(call("files__echo", {"text": "a"}, 1), call("files__echo", {"text": "b"}, 2))
    events, calls = run(ScriptedModel(both, says("done")))
    assert calls == [{"text": "a"}, {"text": "b"}]
    assert [s.call_id for s in end_of(events).steps] == ["call_1", "call_2"]


@pytest.mark.parametrize(
    ("made_up", "error"),
    [
        (call("files__echo", '{"text": "a",'), "not valid JSON"),
        (call("files__echo", '["a"]'), "must be a JSON object, got list"),
        (call("files__delete_all", {}), "there is no tool 'files__delete_all'; the tools: "),
        (call("files__broken", {}), "files/broken failed: RuntimeError"),
        (call("files__refuses", {}), "path must be inside /allowed"),
    ],
)
def test_a_call_that_cannot_run_is_the_models_to_fix(made_up: ToolCall, error: str) -> None:
    model = ScriptedModel(asks(made_up), says("Sorry."))
    events, calls = run(model)
    assert calls == []
    step = end_of(events).steps[0]
    assert step.error is not None and error in step.error
    fed_back = model.seen[1][0][-1]
    assert isinstance(fed_back, ToolResultMessage) and fed_back.content.startswith("Error: ")
    assert error in fed_back.content
    assert end_of(events).answer == "Sorry."


def test_a_model_that_never_stops_calling_is_made_to_answer() -> None:
    def loop_or_answer(messages: list[TurnMessage], choice: ToolChoice) -> ModelTurn:
        if choice == "none":
            return says("From what I found: backups.")
        return asks(call("files__echo", {"text": f"again {len(messages)}"}))

    model = ScriptedModel(loop_or_answer)
    events, calls = run(model, Limits(max_steps=3))
    end = end_of(events)
    assert len(calls) == 3 and end.model_calls == 4
    assert [choice for _, _, choice in model.seen] == ["auto", "auto", "auto", "none"]
    assert end.stopped == "max_steps" and end.answer == "From what I found: backups."
    assert "used all 3 steps" in end.notes[0]


def test_a_model_that_calls_tools_even_when_told_not_to_still_ends() -> None:
    events, _ = run(ScriptedModel(asks(call("files__echo", {"text": "x"}))), Limits(max_steps=2))
    end = end_of(events)
    assert end.stopped == "max_steps"
    assert end.answer == "No answer: the model kept calling tools for 2 steps."


def test_the_same_read_again_is_answered_from_the_first_until_a_write() -> None:
    read, write = asks(call("files__echo", {"text": "a"})), asks(call("files__write", {}))
    model = ScriptedModel(read, read, read, write, read, says("ok"))
    events, calls = run(model, Limits(max_steps=6))
    assert calls == [{"text": "a"}, {"wrote": {}}, {"text": "a"}]  # reads 2 and 3: remembered
    third = model.seen[3][0][-1]
    assert isinstance(third, ToolResultMessage)
    assert third.content == "(the same call as before; its result again)\necho: a"
    assert len(end_of(events).steps) == 5


def test_an_error_is_scrubbed_for_the_caller_and_the_model() -> None:
    def scrub(value: Any) -> Any:
        return json.loads(json.dumps(value).replace("hunter2", "***"))

    model = ScriptedModel(asks(call("files__leaks", {})), says("ok"))
    events, _ = run(model, scrub=scrub)
    assert end_of(events).steps[0].error == "could not start: stderr says token=***"
    fed_back = model.seen[1][0][-1]
    assert isinstance(fed_back, ToolResultMessage) and "hunter2" not in fed_back.content


def test_results_are_cut_to_the_budgets_with_a_note() -> None:
    model = ScriptedModel(
        asks(call("files__big", {"n": 5000}, 1)),
        asks(call("files__big", {"n": 3000}, 2)),
        asks(call("files__big", {"n": 10}, 3)),
        says("ok"),
    )
    limits = Limits(max_steps=5, max_result_chars=2000, max_total_result_chars=3000)
    events, _ = run(model, limits)
    steps = end_of(events).steps
    assert [s.truncated for s in steps] == [True, True, True]
    first = model.seen[1][0][-1]
    assert isinstance(first, ToolResultMessage)
    assert (
        first.content.startswith("x" * 2000)
        and "[truncated: the first 2000 of 5000" in first.content
    )
    third = model.seen[3][0][-1]
    assert isinstance(third, ToolResultMessage) and "reached their budget of 3000" in third.content


def test_the_answer_cites_the_numbers_the_tools_showed() -> None:
    model = ScriptedModel(
        asks(call("knowhub__search", {"query": "backups"})),
        says("Every 1 hour [1], or 2 [2][1]; also [9]."),
    )
    end = end_of(run(model)[0])
    assert [(c["n"], c["chunk_id"]) for c in end.citations] == [(1, "chunk1"), (2, "chunk2")]
    assert any("[9]" in note for note in end.notes)


def test_arguments_are_scrubbed_before_they_are_shown() -> None:
    def scrub(value: Any) -> Any:
        return json.loads(json.dumps(value).replace("hunter2", "***"))

    model = ScriptedModel(asks(call("files__echo", {"text": "pw hunter2"})), says("ok"))
    events, calls = run(model, scrub=scrub)
    assert calls == [{"text": "pw hunter2"}]  # the tool gets what the model sent
    shown = [e for e in events if isinstance(e, ToolCalled | ToolDone)]
    assert all(e.arguments == {"text": "pw ***"} for e in shown)


def test_streamed_text_comes_as_tokens_of_its_step() -> None:
    events, _ = run(ScriptedModel(says("All is well.")), stream=True)
    tokens = [e for e in events if isinstance(e, ChatToken)]
    assert "".join(t.text for t in tokens) == "All is well." and {t.step for t in tokens} == {1}
    assert "first_token" in end_of(events).timings_ms


def test_names_fit_what_providers_accept() -> None:
    assert model_name("fs", "read.file/v2") == "fs__read_file_v2"
    long = model_name("server", "t" * 80)
    assert len(long) == 64 and long != model_name("server", "t" * 81)
