"""An answer's typed events as every interface sends them: ``(kind, payload)``.

The kinds are SSE's ``event:`` names and the WebSocket's ``event`` field; the payloads are
the JSON objects the API documents (``knowhub.answer.events`` says what each holds).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from knowhub.answer.events import AnswerEvent, Error, kind_of

__all__ = ["WireEvent", "failed", "wire"]

WireEvent = tuple[str, dict[str, Any]]


def wire(events: Iterator[AnswerEvent]) -> Iterator[WireEvent]:
    """``events`` as they go on the wire, one by one as they come. Closing this closes
    ``events`` at once (the answer's trace is written, the model's stream ends), not
    whenever its generator is collected."""
    try:
        for event in events:
            yield kind_of(event), event.to_dict()
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def failed(body: dict[str, Any]) -> WireEvent:
    """The ``error`` event that ends a failed answer's stream (``body``: the error's JSON)."""
    error = Error(str(body["error"]), int(body["status"]))
    return kind_of(error), error.to_dict()
