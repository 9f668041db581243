"""``POST /api/chat``: the agent loop of ``knowhub chat`` for HTTP callers.

The server has one :class:`~knowhub.agent.chat.Agent`, built on the first chat: the MCP
servers of ``agent.mcp_config`` start then and stay up until the server stops. Each chat
holds one of ``server.max_answers`` slots while it runs (a chat may take minutes), searches
only what the caller's token may read (its collections, and in them its data scope), and
extends its ``session_id`` as ``/api/ask`` does (the same memory: a session's earlier
questions and answers, whichever route gave them).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from knowhub.agent.chat import Agent, open_agent
from knowhub.caller import Caller
from knowhub.checks import check_query
from knowhub.errors import KnowhubError
from knowhub.interfaces.http.errors import NotConfiguredError
from knowhub.interfaces.http.schemas import ChatBody
from knowhub.interfaces.http.streamed import Streamed
from knowhub.interfaces.wire import wire
from knowhub.providers.llms.base import ChatMessage

if TYPE_CHECKING:
    from knowhub.interfaces.http.service import Event, Service

__all__ = ["CHAT_EVENTS", "ChatQuestion", "Chats"]

CHAT_EVENTS = frozenset({"step", "tool_call", "tool_result", "token", "end"})
"""A chat's stream starts with its first model call: what the model does is content."""


@dataclass(frozen=True)
class ChatQuestion:
    text: str
    collection: str
    history: list[ChatMessage]
    principal: Caller
    session_id: str | None
    max_steps: int | None
    stream: bool


class Chats:
    """The server's agent and the chats it runs."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._agent: Agent | None = None
        self._closed = False
        self._lock = threading.Lock()

    def agent(self) -> Agent:
        with self._lock:
            if self._closed:  # a chat still starting as the server stops starts nothing
                raise KnowhubError("the server is shutting down: chat again once it is back")
            if self._agent is None:
                self._agent = open_agent(self.service.app)
            return self._agent

    def close(self) -> None:
        """Stop the MCP servers (at shutdown); no chat starts them again."""
        with self._lock:
            self._closed = True
            agent, self._agent = self._agent, None
        if agent is not None:
            agent.close()

    async def question(self, principal: Caller, body: ChatBody) -> ChatQuestion:
        """Check a chat request up front (its mistakes are a status, not a stream's end);
        in a thread: the collection's check and the conversation read the store."""
        return await anyio.to_thread.run_sync(self._question, principal, body)

    def _question(self, principal: Caller, body: ChatBody) -> ChatQuestion:
        if self.service.settings.llm.provider == "none":
            raise NotConfiguredError(
                "/api/chat needs a model that calls tools, and this server has none: set "
                "llm.provider to openai, azure or ollama, with llm.model (and llm.base_url), "
                "in knowhub.yaml or KNOWHUB_LLM__*; /api/ask answers without one"
            )
        text = check_query(body.question)
        collection = self.service.collection(principal, body.collection)
        if body.history is not None:
            history = [ChatMessage(t.role, t.content) for t in body.history]
        elif body.session_id:
            history = self.service.conversations.history(principal.owner, body.session_id)
        else:
            history = []
        return ChatQuestion(
            text, collection, history, principal, body.session_id, body.max_steps, body.stream
        )

    def stream(self, question: ChatQuestion, route: str = "/api/chat") -> Streamed:
        """The chat ``question`` asks for (see :class:`Streamed`): its stream starts with
        its first model call (what the model does is content)."""

        def produce() -> Iterator[Event]:
            return wire(
                self.agent().turn(
                    question.text,
                    collection=question.collection,
                    caller=question.principal,
                    history=question.history,
                    stream=question.stream,
                    max_steps=question.max_steps,
                    session_id=question.session_id,
                )
            )

        def ended(end: dict[str, Any]) -> None:
            self._answered(question, end)

        return Streamed(self.service, produce, ended, route, question.collection, CHAT_EVENTS)

    def _answered(self, question: ChatQuestion, end: dict[str, Any]) -> None:
        self.service.metrics.answers.labels("chat").inc()
        if question.session_id:
            self.service.conversations.record(
                question.principal.owner, question.session_id, question.text, str(end["answer"])
            )
