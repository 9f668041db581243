"""``knowhub chat``: one caller's chat turns over knowhub's tools and the configured MCP
servers', each turn traced (kind ``chat``: a span per model call and per tool call).

An :class:`Agent` holds the MCP servers for its whole life (a CLI session, or an HTTP
server's): they start on the first turn and stop when the agent is closed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowhub.agent.builtin import SERVER, knowledge_tools
from knowhub.agent.events import ChatAnswer, ChatEnd, ChatEvent, StepDone, ToolDone
from knowhub.agent.loop import Limits, run_turn
from knowhub.agent.mcp_config import ServerConfig, load_mcp_config
from knowhub.agent.mcp_pool import McpPool
from knowhub.agent.sources import SourceBook
from knowhub.agent.toolbox import Tool, Toolbox
from knowhub.checks import check_query
from knowhub.errors import ConfigError
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.trace.record import Trace, new_trace, preview
from knowhub.trace.stream import traced_stream

if TYPE_CHECKING:
    from knowhub.app import App
    from knowhub.caller import Caller

__all__ = ["Agent", "open_agent", "system_prompt"]

log = logging.getLogger("knowhub.agent")

_MARKS = re.compile(r" ?\[\d{1,3}\]")
_SECRET_KEY = re.compile(r"pass(word)?|secret|token|api[-_]?key|authorization|credential", re.I)
SCOPED_NOTE = (
    "MCP servers are not offered to a caller with a data scope: knowhub cannot scope their "
    "data (docs/security.md, Chats)"
)


class Agent:
    """Chat turns for callers of ``app``, with the MCP ``servers`` (none: knowhub's tools only)."""

    def __init__(self, app: App, servers: Mapping[str, ServerConfig] | None = None) -> None:
        self.app = app
        self.servers = dict(servers or {})
        opts = app.settings.agent
        self.pool = McpPool(
            self.servers, call_timeout_s=opts.tool_timeout_s, start_timeout_s=opts.start_timeout_s
        )
        self._secrets = sorted(
            {s for c in self.servers.values() for s in c.secrets()}
            | set(app.settings.secret_values()),
            key=len,
            reverse=True,
        )
        self._refusals_logged: set[str] = set()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every MCP server this agent started."""
        self.pool.close()

    def turn(
        self,
        question: str,
        *,
        collection: str | None = None,
        caller: Caller | None = None,
        history: Sequence[ChatMessage] = (),
        stream: bool = False,
        max_steps: int | None = None,
        session_id: str | None = None,
    ) -> Iterator[ChatEvent]:
        """Answer ``question`` with the tools, as events (the last one ``end``), traced.
        ``caller`` (default: the App's) decides which collections knowhub's tools may read
        and which documents in them they see, and which MCP servers the model is offered (a
        caller with a data scope is offered none). ``session_id`` names the conversation in
        the trace."""
        check_query(question, "question")
        app = self.app if caller is None else self.app.for_caller(caller)
        name = app.named(collection)
        limits = self._limits(max_steps)
        llm = self._llm()
        reach = _Reach(name, app)
        return self._traced(question, reach, history, stream, limits, llm, session_id)

    def _traced(
        self,
        question: str,
        reach: _Reach,
        history: Sequence[ChatMessage],
        stream: bool,
        limits: Limits,
        llm: LLM,
        session_id: str | None,
    ) -> Iterator[ChatEvent]:
        trace, clock = new_trace("chat", self.app.interface, reach.collection)
        trace.query, trace.model = question.strip(), llm.model_id
        trace.session_id = session_id
        trace.scope = reach.app.scope.to_dict()  # what its tools saw: the scope, never the token
        sources = SourceBook()
        notes: list[str] = []

        def events() -> Iterator[ChatEvent]:
            tools, found = self._tools(sources, reach)
            notes.extend(found)
            return run_turn(
                question,
                llm=llm,
                toolbox=Toolbox(tools),
                sources=sources,
                system=system_prompt(
                    reach.collection, sorted({t.server for t in tools} - {SERVER})
                ),
                limits=limits,
                history=_uncited(history),
                stream=stream,
                scrub=self.scrub,
            )

        def ended(event: ChatEvent) -> ChatAnswer | None:
            _record(trace, event)
            if not isinstance(event, ChatEnd):
                return None
            event.answer.notes[:0] = notes
            event.answer.notes = [self.scrub(n) for n in event.answer.notes]
            trace.notes = list(event.answer.notes)
            trace.reads = sorted(sources.collections() - {reach.collection})
            return event.answer

        return traced_stream(trace, clock, events, ended, self.app.runtime.emit, self.scrub)

    def _llm(self) -> LLM:
        llm = self.app.llm
        if llm is None:
            raise ConfigError(
                "knowhub chat needs a model that calls tools: set llm.provider to openai, azure "
                "or ollama, with llm.model (and llm.base_url), in knowhub.yaml or KNOWHUB_LLM__* "
                "(llm.provider none only answers `knowhub ask`, extractively)"
            )
        return llm

    def _limits(self, max_steps: int | None) -> Limits:
        opts = self.app.settings.agent
        steps = opts.max_steps if max_steps is None else max_steps
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 50:
            raise ConfigError(f"max_steps must be an integer from 1 to 50, got {steps!r}")
        return Limits(steps, opts.max_result_chars, opts.max_total_result_chars)

    def _tools(self, sources: SourceBook, reach: _Reach) -> tuple[list[Tool], list[str]]:
        """knowhub's tools, then the tools of every started server the caller may use that
        its config offers; a note for each server that could not start."""
        tools = knowledge_tools(reach.app, sources, reach.collection)
        notes = []
        usable = [name for name in self.pool.names if reach.app.caller.may_chat_with(name)]
        if usable and not reach.app.scope.unrestricted:
            usable, notes = [], [SCOPED_NOTE]
        for server, listed in self.pool.start(usable).items() if usable else ():
            if isinstance(listed, str):
                notes.append(f"MCP server {server!r} is not available: {listed}")
                continue
            config = self.servers[server]
            for remote in listed:
                why = config.refusal(remote)
                if why is None:
                    run = partial(self.pool.call, server, remote.name)
                    tools.append(
                        Tool(
                            server,
                            remote.name,
                            remote.description,
                            remote.input_schema,
                            run,
                            read_only=remote.read_only,
                        )
                    )
                elif f"{server}/{remote.name}" not in self._refusals_logged:
                    self._refusals_logged.add(f"{server}/{remote.name}")
                    log.info("MCP server %s: tool %s not offered: %s", server, remote.name, why)
        return tools, notes

    def scrub(self, value: Any) -> Any:
        """``value`` with the configured secrets and secret-named arguments masked."""
        if isinstance(value, str):
            for secret in self._secrets:
                value = value.replace(secret, "***")
            return value
        if isinstance(value, dict):
            return {
                k: "***" if _SECRET_KEY.search(str(k)) else self.scrub(v) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        return value


@dataclass(frozen=True)
class _Reach:
    """What one caller's chat may reach: the collection searched by default, and the App as
    that caller may use it (the collections it may read, the documents it sees in them, the
    MCP servers it may use)."""

    collection: str
    app: App


def open_agent(app: App, mcp_config: Path | None = None) -> Agent:
    """An agent with the servers of ``mcp_config`` (default: ``agent.mcp_config``, if set)."""
    path = mcp_config or app.settings.agent.mcp_config
    return Agent(app, load_mcp_config(path) if path is not None else None)


def system_prompt(collection: str, servers: Sequence[str]) -> str:
    """What the model is told before the question: how to use the tools and cite."""
    others = f" Other tools belong to these MCP servers: {', '.join(servers)}." if servers else ""
    return (
        "You answer questions using tools. knowhub__search searches the knowledge base "
        f"(collection {collection!r} unless you name another).{others}\n"
        "- Look facts up with the tools rather than answering from memory.\n"
        "- Put the citation number of each knowledge-base result you use in square brackets "
        "right after the fact it supports, like [1] or [2][3]. Cite only numbers a result "
        "showed you.\n"
        "- If the tools find nothing relevant, say so plainly.\n"
        "- Answer concisely, in the language of the question."
    )


def _record(trace: Trace, event: ChatEvent) -> None:
    """A step of the chat as a span of its trace (stages in order; details in ``steps``)."""
    if isinstance(event, StepDone):
        _stage(trace, f"{event.step}.model", event.ms)
        trace.steps.append({"kind": "model", **event.to_dict()})
    elif isinstance(event, ToolDone):
        _stage(trace, f"{event.step}.{event.server}/{event.tool}", event.ms)
        details = event.to_dict()
        details["arguments"] = preview(json.dumps(details["arguments"], ensure_ascii=False))
        details["error"] = preview(details["error"])
        trace.steps.append({"kind": "tool", **details})
        if event.server not in (SERVER, "?") and event.server not in trace.servers:
            trace.servers.append(event.server)
    elif isinstance(event, ChatEnd):
        end = event.answer
        trace.answer = preview(end.answer)
        trace.source_ids = [c["chunk_id"] for c in end.citations]
        trace.sources_count = len(end.citations)
        if "first_token" in end.timings_ms:
            trace.stages_ms = {"first_token": end.timings_ms["first_token"], **trace.stages_ms}


def _uncited(history: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Earlier turns without their ``[n]``: each turn numbers its own sources, and an old
    ``[1]`` must not read as this turn's."""
    return [
        ChatMessage(m.role, _MARKS.sub("", m.content)) if m.role == "assistant" else m
        for m in history
    ]


def _stage(trace: Trace, name: str, ms: float) -> None:
    unique, n = name, 2
    while unique in trace.stages_ms:
        unique, n = f"{name}#{n}", n + 1
    trace.stages_ms[unique] = ms
