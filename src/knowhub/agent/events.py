"""What a chat turn tells its caller, as it happens: typed events, each with its wire name.

``step``         a model call ended: its number, time, and what it asked for
``tool_call``    the model asked a tool for something (arguments as sent, secrets scrubbed)
``tool_result``  the tool answered (time, size, error) — the result text stays with the model
``token``        text of the answer as it streams (``step`` says which model call wrote it)
``end``          the whole answer: text, the tool calls, the sources it cites, the trace id
``error``        the turn failed (the answer layer's :class:`~knowhub.answer.events.Error`)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from knowhub.answer.events import Error

__all__ = [
    "ChatAnswer",
    "ChatEnd",
    "ChatEvent",
    "ChatToken",
    "StepDone",
    "ToolCalled",
    "ToolDone",
    "chat_kind",
]


@dataclass(frozen=True)
class StepDone:
    step: int
    ms: float
    tool_calls: int
    finish_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ToolCalled:
    step: int
    call_id: str
    server: str
    tool: str
    arguments: Any  # the parsed arguments (scrubbed), or the text the model wrote if invalid

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ToolDone:
    """One tool call's record: what ``knowhub chat --json`` lists as ``steps``."""

    step: int
    call_id: str
    server: str
    tool: str
    arguments: Any
    ms: float
    error: str | None
    result_chars: int
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ChatToken:
    text: str
    step: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ChatAnswer:
    """A chat turn's outcome. ``stopped``: ``answer`` (the model answered), ``max_steps``
    (it was made to answer after the last step)."""

    question: str
    answer: str
    model: str
    steps: list[ToolDone] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    model_calls: int = 0
    stopped: str = "answer"
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    trace_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "steps": [s.to_dict() for s in self.steps],
            "citations": self.citations,
            "trace_id": self.trace_id,
            "model": self.model,
            "model_calls": self.model_calls,
            "stopped": self.stopped,
            "notes": self.notes,
            "timings_ms": self.timings_ms,
        }


@dataclass(frozen=True)
class ChatEnd:
    answer: ChatAnswer

    def to_dict(self) -> dict[str, Any]:
        return self.answer.to_dict()


ChatEvent = StepDone | ToolCalled | ToolDone | ChatToken | ChatEnd | Error

_KINDS: dict[type, str] = {
    StepDone: "step",
    ToolCalled: "tool_call",
    ToolDone: "tool_result",
    ChatToken: "token",
    ChatEnd: "end",
    Error: "error",
}


def chat_kind(event: ChatEvent) -> str:
    """The event's name on the wire (SSE ``event:``)."""
    return _KINDS[type(event)]
