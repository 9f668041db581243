"""An answer's or a chat's typed events as every interface sends them: ``(kind, payload)``.

The kinds are SSE's ``event:`` names and the WebSocket's ``event`` field; the payloads are
the JSON objects the API documents (``knowhub.answer.events`` says what each holds).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from knowhub.agent.events import (
    ChatEnd,
    ChatEvent,
    ChatToken,
    StepDone,
    ToolCalled,
    ToolDone,
    chat_kind,
)
from knowhub.answer.events import AnswerEvent, Error, kind_of

__all__ = ["WireEvent", "failed", "wire"]

WireEvent = tuple[str, dict[str, Any]]
_CHAT_TYPES = (StepDone, ToolCalled, ToolDone, ChatToken, ChatEnd)


def wire(events: Iterator[AnswerEvent] | Iterator[ChatEvent]) -> Iterator[WireEvent]:
    """``events`` (an answer's or a chat's) as they go on the wire, one by one as they come.
    Closing this closes ``events`` at once (the trace is written, the model's stream ends),
    not whenever its generator is collected."""
    try:
        for event in events:
            kind = chat_kind(event) if isinstance(event, _CHAT_TYPES) else kind_of(event)
            yield kind, event.to_dict()
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def failed(body: dict[str, Any]) -> WireEvent:
    """The ``error`` event that ends a failed answer's stream (``body``: the error's JSON)."""
    error = Error(str(body["error"]), int(body["status"]))
    return kind_of(error), error.to_dict()
