"""``knowhub chat``: a model that uses knowhub's tools and the configured MCP servers' to
answer, once (a QUESTION) or in a conversation (no QUESTION: a prompt with history).

What the tools are doing goes to stderr as it happens; the answer to stdout.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import click

from knowhub.agent.chat import Agent, open_agent
from knowhub.agent.events import ChatEvent, chat_kind
from knowhub.errors import KnowhubError
from knowhub.interfaces.cli.ask import where
from knowhub.interfaces.cli.context import CliContext, emit
from knowhub.interfaces.terminal import echo, echo_json
from knowhub.providers.llms.base import ChatMessage

__all__ = ["chat"]

_HISTORY_TURNS = 10  # question/answer pairs a conversation keeps for the model


@click.command()
@click.argument("question", required=False)
@click.option(
    "--collection", "-c", help="Collection knowhub__search uses (default: the configured one)."
)
@click.option(
    "--mcp-config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An mcpServers JSON file (default: agent.mcp_config, if set).",
)
@click.option("--max-steps", type=click.IntRange(1, 50), help="Model calls with tools (8).")
@click.option("--stream", is_flag=True, help="Print the answer as it is generated.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (with --stream: one event per line)."
)
@click.pass_obj
def chat(
    obj: CliContext,
    question: str | None,
    collection: str | None,
    mcp_config: Path | None,
    max_steps: int | None,
    stream: bool,
    as_json: bool,
) -> None:
    """Answer QUESTION with an LLM that calls tools: knowhub's search (cited as [n]) and
    those of the MCP servers in --mcp-config. Without QUESTION: a conversation.

    Needs a model with tool calling (llm.provider openai, azure or ollama).
    """
    with open_agent(obj.app(), mcp_config) as agent:
        turn = partial(agent.turn, collection=collection, max_steps=max_steps, stream=stream)
        if question is not None:
            _answer(turn(question), stream, as_json)
            return
        _conversation(agent, turn, stream, as_json)


def _answer(events: Iterator[ChatEvent], stream: bool, as_json: bool) -> str:
    """Show one turn's events; the answer's text."""
    if stream and as_json:
        return _json_lines(events)
    result: dict[str, Any] = {}
    shown = _Shown()
    for event in events:
        kind = chat_kind(event)
        payload = event.to_dict()
        if kind == "token" and stream:
            shown.token(payload["text"])
        elif kind in ("tool_call", "tool_result") and not as_json:
            shown.tool(kind, payload)
        elif kind == "end":
            result = payload
    shown.done()
    # Streamed text that tools followed was the model thinking aloud; an answer it was made
    # to give (or a stand-in for none) was not streamed: then it is printed whole.
    answered = stream and shown.since_tools.strip() == str(result.get("answer", "")).strip()
    emit(result if as_json else _render(result, answer_shown=answered), as_json)
    return str(result.get("answer", ""))


def _json_lines(events: Iterator[ChatEvent]) -> str:
    answer = ""
    for event in events:
        kind, payload = chat_kind(event), event.to_dict()
        answer = payload["answer"] if kind == "end" else answer
        echo_json({"event": kind, **payload})
    return answer


def _conversation(
    agent: Agent, turn: Callable[..., Iterator[ChatEvent]], stream: bool, as_json: bool
) -> None:
    """Questions from the prompt until /exit or end of input; Ctrl-C stops the answer being
    given (and, at the prompt, the conversation)."""
    with contextlib.suppress(ImportError):  # not on every platform; input() works without
        import readline  # noqa: F401  (line editing and ↑ history for input())
    servers = ", ".join(agent.servers) or "none"
    echo(f"knowhub chat: MCP servers {servers}; /exit or Ctrl-D to leave", err=True)
    history: list[ChatMessage] = []
    while True:
        try:
            question = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            echo("", err=True)
            return
        if question in ("/exit", "/quit"):
            return
        if not question:
            continue
        try:
            answer = _answer(turn(question, history=history), stream, as_json)
        except KeyboardInterrupt:
            echo("\n(stopped)", err=True)
            continue
        except KnowhubError as exc:
            echo(f"error: {exc}", err=True)
            continue
        history = [*history, ChatMessage("user", question), ChatMessage("assistant", answer)]
        history = history[-2 * _HISTORY_TURNS :]


class _Shown:
    """Streamed text on stdout and tool lines on stderr, each starting on a fresh line."""

    def __init__(self) -> None:
        self.mid_line = False
        self.since_tools = ""  # the text streamed since the last tool line

    def token(self, text: str) -> None:
        echo(text, nl=False)
        sys.stdout.flush()
        self.mid_line = not text.endswith("\n")
        self.since_tools += text

    def tool(self, kind: str, payload: dict[str, Any]) -> None:
        self.done()
        self.since_tools = ""
        name = f"{payload['server']}/{payload['tool']}"
        if kind == "tool_call":
            arguments = json.dumps(payload["arguments"], ensure_ascii=False)
            echo(f"· {name} {_cut(arguments, 160)}", err=True)
        elif payload["error"]:
            echo(f"  ✗ {name}: {_cut(payload['error'], 200)}", err=True)
        else:
            cut = ", truncated" if payload["truncated"] else ""
            echo(f"  ✓ {payload['result_chars']} chars in {payload['ms']:.0f} ms{cut}", err=True)

    def done(self) -> None:
        if self.mid_line:
            echo("")
            self.mid_line = False


def _render(result: dict[str, Any], answer_shown: bool) -> str:
    lines = [] if answer_shown else [result["answer"]]
    if result["citations"]:
        lines += ["", "Sources:"]
        lines += [f"  [{c['n']}] {where(c)}" for c in result["citations"]]
    lines += [f"note: {n}" for n in result["notes"]]
    calls = len(result["steps"])
    lines.append(
        f"({calls} tool call{'s' * (calls != 1)}, {result['model_calls']} model calls, "
        f"{result['model']}, trace {result['trace_id']})"
    )
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
