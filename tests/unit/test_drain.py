"""Ending answers in flight when a server stops (knowhub.interfaces.drain), with real pumps
and threads; the servers' own shutdown is in tests/integration/test_server_shutdown.py."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from knowhub.interfaces.drain import Drain, ShuttingDownError
from knowhub.interfaces.http.errors import error_status
from knowhub.interfaces.http.pump import EventPump

pytestmark = pytest.mark.anyio

Event = tuple[str, dict[str, Any]]
SAFETY_S = 60  # a bound on a hung test, never the assertion


def _stalled(first: Event, release: threading.Event, closed: threading.Event) -> Iterator[Event]:
    """One event, then nothing until ``release`` (a model that stopped sending)."""
    try:
        yield first
        release.wait(SAFETY_S)
        yield "token", {"text": "late"}
    finally:
        closed.set()


async def test_an_answer_still_running_after_the_grace_ends_with_shutting_down() -> None:
    drain, release, closed = Drain(), threading.Event(), threading.Event()
    pump = EventPump(lambda: _stalled(("token", {"text": "a"}), release, closed), drain=drain)
    assert await pump.start().next() == ("token", {"text": "a"})
    told: list[ShuttingDownError] = []

    async def reader() -> None:  # as an SSE body or a WebSocket reads the rest
        try:
            await pump.next()
        except ShuttingDownError as exc:
            told.append(exc)
        finally:
            pump.close()

    with anyio.fail_after(SAFETY_S):
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            await drain.end(0)  # returns once the reader has been told
            assert len(told) == 1
        release.set()
        await anyio.to_thread.run_sync(closed.wait, SAFETY_S)  # the model's stream closed
    with pytest.raises(ShuttingDownError):
        EventPump(lambda: iter([]), drain=drain).start()  # a new answer: refused


async def test_the_reader_is_told_once() -> None:
    drain, release, closed = Drain(), threading.Event(), threading.Event()
    pump = EventPump(lambda: _stalled(("token", {}), release, closed), drain=drain).start()
    assert await pump.next() == ("token", {})
    pump.interrupt()
    with pytest.raises(ShuttingDownError, match="the server is shutting down"):
        await pump.next()
    assert await pump.next() is None
    release.set()


async def test_an_answer_whose_end_was_delivered_is_not_ended_early() -> None:
    produced = threading.Event()

    def answer() -> Iterator[Event]:
        yield "token", {"text": "a"}
        yield "end", {"answer": "a"}
        produced.set()

    pump = EventPump(answer).start()
    await anyio.to_thread.run_sync(produced.wait, SAFETY_S)
    pump.interrupt()  # the server stops after the model, before the client had the end
    assert [kind async for kind, _ in pump] == ["token", "end"]


async def test_an_answer_whose_reader_never_started_does_not_hold_the_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The client left before its response began: the SSE body, whose ``finally`` closes
    the pump, never runs. Once the answer is produced, a stop has nothing to wait for."""
    drain, produced = Drain(), anyio.Event()
    events = [("token", {"text": "a"}), ("end", {"answer": "a"})]
    pump = EventPump(lambda: iter(events), on_exit=produced.set, drain=drain).start()
    try:
        with anyio.fail_after(SAFETY_S):
            await produced.wait()
        with caplog.at_level(logging.WARNING, "knowhub.server"):
            await drain.end(SAFETY_S, hurry=lambda: True)  # would cut short a wait: none
        assert not caplog.records, caplog.text  # "1 answer(s) in flight", "still running"
    finally:
        pump.close()  # as the response's end would (its streams, unclosed, would warn)


def test_a_watched_answer_ends_at_its_next_event_once_answers_must_end() -> None:
    drain, started, closed = Drain(), threading.Event(), threading.Event()
    outcome: list[object] = []

    def answer() -> Iterator[str]:
        try:
            for n in range(100_000):
                started.set()
                time.sleep(0.01)  # the model's pace: a token every 10 ms
                yield f"token {n}"
        finally:
            closed.set()

    def ask() -> None:  # as the MCP ask tool reads it, in a worker thread
        try:
            outcome.extend(drain.watch(answer()))
        except ShuttingDownError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=ask)
    thread.start()
    try:
        assert started.wait(SAFETY_S)
        anyio.run(drain.end, 0)  # returns once the answer has ended
        assert closed.is_set() and isinstance(outcome[-1], ShuttingDownError), outcome[-3:]
    finally:
        thread.join(SAFETY_S)
    with pytest.raises(ShuttingDownError):
        next(drain.watch(iter(["refused"])))


def test_shutting_down_is_a_503() -> None:
    assert error_status(ShuttingDownError()) == 503
