"""The tool loop of one chat turn: the model asks for tools, they run, their results go
back, until the model answers in plain text or the steps run out.

Bounded every way a model can misbehave: ``max_steps`` model calls that may use tools
(then one more that may not, told to answer with what it has); each result cut to
``max_result_chars`` and all of a turn's to ``max_total_result_chars``, with a note saying
so; a call repeated with the same arguments is answered from the first one; an unknown
tool or arguments that are not a JSON object are answered as the tool's error, for the
model to correct. Tool calls run one after another, in the order the model gave them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from knowhub.agent.events import (
    ChatAnswer,
    ChatEnd,
    ChatEvent,
    ChatToken,
    StepDone,
    ToolCalled,
    ToolDone,
)
from knowhub.agent.mcp_pool import ToolOutcome
from knowhub.agent.sources import SourceBook
from knowhub.agent.toolbox import Toolbox, parse_arguments
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.llms.tools import (
    ModelTurn,
    ToolCall,
    ToolCallsMessage,
    ToolChoice,
    ToolResultMessage,
    TurnMessage,
)

__all__ = ["Limits", "run_turn"]

Scrub = Callable[[Any], Any]


@dataclass(frozen=True)
class Limits:
    max_steps: int = 8
    max_result_chars: int = 12_000
    max_total_result_chars: int = 60_000


@dataclass
class _Turn:
    """What one run of the loop carries from step to step."""

    llm: LLM
    toolbox: Toolbox
    limits: Limits
    stream: bool
    scrub: Scrub
    answer: ChatAnswer
    started: float
    budget: int
    seen: dict[str, str]


def run_turn(
    question: str,
    *,
    llm: LLM,
    toolbox: Toolbox,
    sources: SourceBook,
    system: str,
    limits: Limits,
    history: Sequence[ChatMessage] = (),
    stream: bool = False,
    scrub: Scrub = lambda value: value,
) -> Iterator[ChatEvent]:
    """Answer ``question`` with the tools of ``toolbox``; the last event is the ``end``."""
    answer = ChatAnswer(question, "", llm.model_id)
    turn = _Turn(
        llm,
        toolbox,
        limits,
        stream,
        scrub,
        answer,
        time.perf_counter(),
        limits.max_total_result_chars,
        {},
    )
    messages: list[TurnMessage] = [
        ChatMessage("system", system),
        *history,
        ChatMessage("user", question),
    ]
    final: ModelTurn | None = None
    for step in range(1, limits.max_steps + 1):
        reply = yield from _model_call(turn, messages, step, "auto")
        if not reply.tool_calls:
            final = reply
            break
        messages.append(ToolCallsMessage(reply.text, reply.tool_calls))
        for call in reply.tool_calls:
            result = yield from _tool_call(turn, call, step)
            messages.append(ToolResultMessage(call, result))
    if final is None:
        final = yield from _last_word(turn, messages)
    answer.answer = final.text.strip()
    answer.citations, invalid = sources.cited(answer.answer)
    if invalid:
        answer.notes.append(
            f"the answer cites {', '.join(f'[{n}]' for n in invalid)}, which no search showed"
        )
    answer.timings_ms["total"] = _ms(turn.started)
    yield ChatEnd(answer)


def _last_word(turn: _Turn, messages: list[TurnMessage]) -> Generator[ChatEvent, None, ModelTurn]:
    """The answer after the last step: the model is told to answer, with no tools."""
    steps = turn.limits.max_steps
    turn.answer.stopped = "max_steps"
    turn.answer.notes.append(f"the model used all {steps} steps; it was asked to answer then")
    messages.append(
        ChatMessage(
            "user",
            f"You have used all {steps} tool steps. Do not call tools: answer the question now "
            "from what the tools returned, and say what is still unknown.",
        )
    )
    reply = yield from _model_call(turn, messages, steps + 1, "none")
    if not reply.text.strip():
        return ModelTurn(f"No answer: the model kept calling tools for {steps} steps.")
    return reply


def _model_call(
    turn: _Turn, messages: list[TurnMessage], step: int, choice: ToolChoice
) -> Generator[ChatEvent, None, ModelTurn]:
    started = time.perf_counter()
    reply: ModelTurn | None = None
    specs = turn.toolbox.specs()
    for item in turn.llm.tool_turn(messages, specs, stream=turn.stream, tool_choice=choice):
        if isinstance(item, ModelTurn):
            reply = item
        elif item:
            turn.answer.timings_ms.setdefault("first_token", _ms(turn.started))
            yield ChatToken(item, step)
    if reply is None:  # the provider contract ends every turn with one
        raise RuntimeError(f"llm {turn.llm.model_id} ended a turn without its result")
    calls = () if choice == "none" else reply.tool_calls
    turn.answer.model_calls += 1
    yield StepDone(step, _ms(started), len(calls), reply.finish_reason)
    return ModelTurn(reply.text, calls, reply.finish_reason)


def _tool_call(turn: _Turn, call: ToolCall, step: int) -> Generator[ChatEvent, None, str]:
    """Run ``call`` (announced first: a slow tool shows what it is doing); the text the
    model reads back. A read-only tool called again with the same arguments is answered
    from its first result, until a tool that may change things runs."""
    tool = turn.toolbox.find(call.name)
    server, name = (tool.server, tool.name) if tool else ("?", call.name)
    parsed, _ = parse_arguments(call.arguments)
    arguments = turn.scrub(call.arguments if parsed is None else parsed)
    yield ToolCalled(step, call.id, server, name, arguments)
    started = time.perf_counter()
    key = call.name + "\0" + (json.dumps(parsed, sort_keys=True) if parsed else call.arguments)
    if tool is not None and tool.read_only and key in turn.seen:
        result = ToolOutcome(f"(the same call as before; its result again)\n{turn.seen[key]}")
    else:
        result = turn.toolbox.run(call)
        if tool is not None and not tool.read_only:
            turn.seen.clear()  # it may have changed what the earlier calls read
        elif not result.is_error:
            turn.seen[key] = result.text
    # An error may quote a server's stderr or URL: no secret of the config goes on.
    text, truncated = _fit(turn, turn.scrub(result.text) if result.is_error else result.text)
    done = ToolDone(
        step=step,
        call_id=call.id,
        server=server,
        tool=name,
        arguments=arguments,
        ms=_ms(started),
        error=text if result.is_error else None,
        result_chars=len(text),
        truncated=truncated,
    )
    turn.answer.steps.append(done)
    yield done
    return f"Error: {text}" if result.is_error else text


def _fit(turn: _Turn, text: str) -> tuple[str, bool]:
    """``text`` within the result budgets, with a note to the model when it was cut."""
    limit = min(turn.limits.max_result_chars, turn.budget)
    if limit <= 0:
        return (
            f"(not shown: this turn's tool results reached their budget of "
            f"{turn.limits.max_total_result_chars} characters; answer with what you have)",
            True,
        )
    if len(text) <= limit:
        turn.budget -= len(text)
        return text, False
    turn.budget -= limit
    note = f"\n[truncated: the first {limit} of {len(text)} characters; ask for a smaller part]"
    return text[:limit] + note, True


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000.0, 3)
