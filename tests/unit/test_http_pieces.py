"""The HTTP API's small parts: conversation memory, the answer pump, error shapes."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from knowhub.errors import AuthError, ConfigError, ProviderError, QueryError, StoreError
from knowhub.interfaces.http.errors import describe_invalid, error_body, error_status
from knowhub.interfaces.http.limits import Gate, ServerBusyError
from knowhub.interfaces.http.pump import EventPump
from knowhub.interfaces.http.sessions import Conversations
from knowhub.providers.llms.base import ChatMessage
from knowhub.providers.stores.state import Change, Entry, MemoryState
from tests.helpers import WAIT_S

Event = tuple[str, dict[str, Any]]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_session_keeps_its_last_turns_as_chat_messages() -> None:
    memory = Conversations(max_turns=2)
    for n in range(3):
        memory.record("alice", "s", f"q{n}", f"a{n}")
    assert memory.history("alice", "s") == [
        ChatMessage("user", "q1"),
        ChatMessage("assistant", "a1"),
        ChatMessage("user", "q2"),
        ChatMessage("assistant", "a2"),
    ]
    assert memory.history("alice", "other") == []
    assert memory.history("bob", "s") == []  # another token never sees it


def test_the_least_recently_used_session_goes_first() -> None:
    memory = Conversations(max_sessions=2)
    memory.record("t", "a", "q", "x")
    memory.record("t", "b", "q", "x")
    memory.history("t", "a")  # a is now the most recently used
    memory.record("t", "c", "q", "x")
    assert len(memory) == 2
    assert memory.history("t", "b") == [] and memory.history("t", "a") != []


def test_idle_sessions_are_forgotten() -> None:
    clock = Clock()
    memory = Conversations(idle_s=60, clock=clock)
    memory.record("t", "old", "q", "a")
    clock.now = 30
    memory.record("t", "new", "q", "a")
    clock.now = 61
    assert memory.history("t", "old") == [] and memory.history("t", "new") != []
    clock.now = 200
    assert len(memory) == 0


def test_sessions_are_bounded_in_characters_too() -> None:
    memory = Conversations(max_chars=100)
    memory.record("t", "a", "q" * 40, "x" * 40)
    memory.record("t", "b", "q" * 10, "x" * 10)  # 100 chars in all: both kept
    assert len(memory) == 2
    memory.record("t", "c", "q", "x")  # over: the least recently used goes
    assert len(memory) == 2 and memory.history("t", "a") == []
    memory.record("t", "huge", "q" * 500, "x" * 500)  # alone over the bound: kept, alone
    assert len(memory) == 1 and memory.history("t", "huge") != []


@pytest.mark.anyio
async def test_a_gate_runs_its_slots_queues_the_next_and_refuses_past_the_queue() -> None:
    gate = Gate("answer", slots=2, queue=1)
    first, second = await gate.acquire(), await gate.acquire()
    assert gate.busy == 2
    got: list[str] = []

    async def third() -> None:
        release = await gate.acquire()
        got.append("third")
        release()

    async with anyio.create_task_group() as group:
        group.start_soon(third)
        with anyio.fail_after(WAIT_S):
            while gate.waiting != 1:
                await anyio.sleep(0)
        with pytest.raises(ServerBusyError, match="all 2 answer slots are taken"):
            await gate.acquire()
        first()
    assert got == ["third"]
    second()
    assert gate.busy == 0


@pytest.mark.anyio
async def test_worker_gate_runs_calls_in_bounded_threads() -> None:
    gate = Gate("worker", slots=2, queue=0)
    started = threading.Barrier(3)
    release = threading.Event()

    def blocked() -> str:
        started.wait(WAIT_S)
        release.wait(WAIT_S)
        return threading.current_thread().name

    async with anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(gate.run, blocked)
        await anyio.to_thread.run_sync(started.wait, WAIT_S)  # both calls hold a slot
        with pytest.raises(ServerBusyError):
            await gate.run(lambda: "third")
        release.set()
    assert await gate.run(lambda: "free again") == "free again"


@pytest.mark.anyio
async def test_the_pump_gives_its_slot_back_when_its_thread_ends() -> None:
    gate = Gate("answer", slots=1, queue=0)
    release = await gate.acquire()

    def events() -> Iterator[Event]:
        yield "end", {"answer": "done"}

    pump = EventPump(events, on_exit=release).start()
    assert [event async for event in pump] == [("end", {"answer": "done"})]
    with anyio.fail_after(WAIT_S):
        while gate.busy:
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_the_pump_delivers_events_in_order_then_ends() -> None:
    def events() -> Iterator[Event]:
        for n in range(5):
            yield "token", {"n": n}
        yield "end", {"answer": "done"}

    pump = EventPump(events).start()
    got = [event async for event in pump]
    assert got == [*[("token", {"n": n}) for n in range(5)], ("end", {"answer": "done"})]
    assert await pump.next() is None


@pytest.mark.anyio
async def test_the_pump_holds_back_until_content_and_reraises_failures() -> None:
    def failing() -> Iterator[Event]:
        yield "stage", {"stage": "routing"}
        raise QueryError("unknown collection 'x'")

    with pytest.raises(QueryError, match="unknown collection"):
        await EventPump(failing).start().until_content()

    def answering() -> Iterator[Event]:
        yield "stage", {"stage": "routing"}
        yield "sources", {"sources": []}
        raise ProviderError("llm down")

    pump = EventPump(answering).start()
    assert [kind for kind, _ in await pump.until_content()] == ["stage", "sources"]
    with pytest.raises(ProviderError, match="llm down"):
        await pump.next()


@pytest.mark.anyio
async def test_closing_the_pump_stops_the_producer_and_closes_its_stream() -> None:
    closed = threading.Event()
    produced: list[int] = []

    def endless() -> Iterator[Event]:
        try:
            for n in range(10_000):
                produced.append(n)
                time.sleep(0.01)
                yield "token", {"n": n}
        finally:
            closed.set()  # where a provider closes its HTTP stream

    pump = EventPump(endless, buffer=1).start()
    assert await pump.next() == ("token", {"n": 0})
    pump.close()
    with anyio.fail_after(WAIT_S):
        while not closed.is_set():
            await anyio.sleep(0.01)
    assert len(produced) < 10


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (QueryError("x"), 400),
        (StoreError("x"), 400),
        (AuthError("x"), 403),
        (ProviderError("x"), 502),
        (ConfigError("x"), 500),
    ],
)
def test_errors_map_to_statuses(error: Exception, status: int) -> None:
    assert error_status(error) == status
    assert error_body(error) == {"error": "x", "status": status}


def test_unexpected_errors_keep_their_text_out_of_the_answer() -> None:
    assert error_body(KeyError("secret internals")) == {
        "error": "internal error: see the server log",
        "status": 500,
    }


def test_validation_errors_read_as_one_line() -> None:
    errors = [
        {"loc": ("body", "top_k"), "msg": "Input should be less than or equal to 100"},
        {"loc": ("body", "history", 0, "role"), "msg": "Input should be 'user' or 'assistant'"},
    ]
    assert describe_invalid(errors) == (
        "invalid request: top_k: Input should be less than or equal to 100; "
        "history.0.role: Input should be 'user' or 'assistant'"
    )


class _LoopClosingNow:
    """An event loop that stops in the instant after anyio checked it is open."""

    def is_closed(self) -> bool:
        return False

    def call_soon_threadsafe(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("Event loop is closed")


def test_an_event_for_a_loop_closing_meanwhile_leaves_no_coroutine_behind() -> None:
    from anyio._backends._asyncio import AsyncIOBackend
    from anyio.lowlevel import EventLoopToken

    pump = EventPump(lambda: iter([]))
    token = EventLoopToken(AsyncIOBackend, _LoopClosingNow())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="closed"):
            pump._deliver(("token", {"text": "late"}), token)
        pump.close()
        pump._send.close()  # what the producer's end would do: it never started here
        gc.collect()
    assert [w for w in seen if "never awaited" in str(w.message)] == []


class _LockedState(MemoryState):
    """A store whose writes fail (another replica holding SQLite's write lock too long)."""

    def update(
        self, kind: str, owner: str, key: str, change: Change, now: float, ttl_s: float
    ) -> Entry | None:
        raise sqlite3.OperationalError("database is locked")


def test_a_turn_the_store_cannot_keep_loses_no_answer(caplog: pytest.LogCaptureFixture) -> None:
    """The turn is recorded once the answer is made: raising, it turned a finished answer
    into a 500 (a stream's last event into an error)."""
    conversations = Conversations(state=_LockedState())
    conversations.record("alice", "s1", "How often?", "Every 6 hours [1].")
    assert conversations.history("alice", "s1") == []
    assert "session s1: this turn was not remembered" in caplog.text
