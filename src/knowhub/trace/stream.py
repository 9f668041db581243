"""A stream of events traced once: an answer's (``Collection.ask``) and a chat's (the agent).

The trace is written once: at the stream's end event, before that event is told (a caller
holding the answer, to give feedback on it, finds its trace), or, when no end comes, as the
stream stops: with the error's text if it failed (a bug's too), or a note that the caller
stopped reading. The end's answer gets the trace's id here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

from knowhub.errors import KnowhubError
from knowhub.trace.record import Trace

__all__ = ["Traceable", "traced_stream"]

E = TypeVar("E")


class Traceable(Protocol):
    """An answer that carries the id of its trace."""

    trace_id: str | None


def traced_stream(
    trace: Trace,
    clock: float,
    events: Callable[[], Iterable[E]],
    ended: Callable[[E], Traceable | None],
    emit: Callable[[Trace, float], None],
    scrub: Callable[[str], str] = str,
) -> Iterator[E]:
    """The events ``events()`` makes (called inside, so a failure to start is traced too),
    with ``trace`` (begun at ``clock``) written by ``emit`` once; ``ended(event)`` puts the
    event on the trace and returns the answer of the end event (None for any other);
    ``scrub`` cleans an error's text of secrets before it is kept."""
    emitted = False
    try:
        for event in events():
            answer = ended(event)
            if answer is not None:
                answer.trace_id = trace.trace_id
                emit(trace, clock)
                emitted = True
            yield event
    except KnowhubError as exc:
        trace.error = scrub(str(exc))
        raise
    except GeneratorExit:
        trace.notes.append("the caller stopped reading before the end")
        raise
    except Exception as exc:  # a bug still leaves a trace saying what broke
        trace.error = scrub(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if not emitted:
            emit(trace, clock)
