"""SIGTERM while answers stream: after ``server.shutdown_grace_s`` each open stream ends with
an ``error`` event saying the server is shutting down, and the server exits.

Real ``knowhub serve http`` and ``serve mcp --transport http`` processes; the model is the
scripted LLM server streaming a token every 0.1 s, so a whole answer would take minutes.
Nothing here waits on a clock: each step waits for an event (the first token, the model's
request), and the only timeout is a watchdog that kills the server if it never exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp_types import CallToolResult
from starlette.requests import ClientDisconnect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from knowhub import build_app, load_settings
from knowhub.interfaces.drain import Drain
from knowhub.interfaces.http import create_app
from knowhub.testing.llm_server import LlmServer, serve
from tests.helpers import FAST_ENV, write
from tests.http_helpers import (
    FULL,
    TOKEN_ENV,
    SseEvent,
    api_server,
    build_corpus,
    llm_env,
    sse_events,
)
from tests.mcp_helpers import eventually, http_server, text_of

SAFETY_S = 120  # a bound on a hung server, never the assertion
QUESTION = "How often do database backups run?"
LONG_ANSWER = " ".join(f"word{n}" for n in range(3000))  # 300 s at 10 tokens a second
SHUTTING_DOWN = "the server is shutting down"


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    with serve(LONG_ANSWER, token_delay_s=0.1) as running:
        yield running


def _env(llm: LlmServer) -> dict[str, str]:
    return llm_env(llm, KNOWHUB_SERVER__SHUTDOWN_GRACE_S="0.5")


@contextmanager
def _watchdog(process: subprocess.Popen[str]) -> Iterator[None]:
    """Kill ``process`` if it is still running after :data:`SAFETY_S` (the streams then end
    cut, and the assertions fail instead of the test hanging)."""
    timer = threading.Timer(SAFETY_S, process.kill)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _until_token(events: Iterator[SseEvent]) -> None:
    for event in events:
        if event.event == "token":
            return
    raise AssertionError("the stream ended before its first token")


def _ws_until_token(ws: ClientConnection) -> None:
    while (event := json.loads(ws.recv(timeout=SAFETY_S)))["event"] != "token":
        assert event["event"] not in ("end", "error"), event


def _ws_rest(ws: ClientConnection) -> list[dict[str, Any]]:
    """The events the socket still sends, up to its close."""
    events = []
    try:
        while True:
            events.append(json.loads(ws.recv(timeout=SAFETY_S)))
    except ConnectionClosed:
        return events


def _assert_shutting_down(event: dict[str, Any], kind: str) -> None:
    assert kind == "error", (kind, event)
    assert event["status"] == 503 and SHUTTING_DOWN in event["error"], event


def test_sigterm_ends_every_open_stream_with_an_error_event_and_the_server_exits(
    tmp_path: Path, llm: LlmServer
) -> None:
    data = build_corpus(tmp_path)
    env = {**TOKEN_ENV, **_env(llm)}
    with (
        api_server(cwd=tmp_path, data_dir=data, env=env, token=FULL) as server,
        ExitStack() as streams,
    ):
        sse = {}
        for route in ("/api/ask", "/api/chat"):
            response = streams.enter_context(
                httpx.stream(
                    "POST",
                    server.url + route,
                    json={"question": QUESTION, "stream": True},
                    headers=server.headers(),
                    timeout=SAFETY_S,
                )
            )
            assert response.status_code == 200, response.read()
            sse[route] = sse_events(response.iter_lines())
            _until_token(sse[route])
        ws = streams.enter_context(
            connect(f"{server.ws_url}?token={FULL}", proxy=None, open_timeout=SAFETY_S)
        )
        ws.send(json.dumps({"question": QUESTION, "id": 7}))
        _ws_until_token(ws)

        with _watchdog(server.process):
            server.process.send_signal(signal.SIGTERM)
            for events in sse.values():
                last = list(events)[-1]
                _assert_shutting_down(last.data, last.event)
            ws_events = _ws_rest(ws)
            _assert_shutting_down(ws_events[-1], ws_events[-1]["event"])
            assert ws_events[-1]["id"] == 7
            assert ws.close_code == 1012  # "service restart": after the error event
            server.process.wait()
        assert server.process.returncode in (0, -signal.SIGTERM), server.logs()
        assert "Traceback" not in server.logs()


@pytest.mark.anyio
async def test_sigterm_ends_an_mcp_ask_in_flight_with_a_tool_error_and_the_server_exits(
    tmp_path: Path, llm: LlmServer
) -> None:
    write(tmp_path / "docs" / "ops.md", "# Ops\n\nDatabase backups run every 6 hours.\n")
    asked = len(llm.requests)
    result: list[CallToolResult] = []

    async def streaming() -> bool:
        return len(llm.requests) > asked  # the model is answering

    with http_server(
        "--docs", "docs", cwd=tmp_path, data_dir=tmp_path / "data", env=_env(llm)
    ) as server:
        async with server.client() as client:

            async def ask() -> None:
                result.append(await client.call_tool("ask", {"question": QUESTION}))

            with _watchdog(server.process), anyio.fail_after(2 * SAFETY_S):
                async with anyio.create_task_group() as group:
                    group.start_soon(ask)
                    await eventually(streaming, timeout=SAFETY_S)
                    server.process.send_signal(signal.SIGTERM)
        assert result[0].is_error and SHUTTING_DOWN in text_of(result[0]), result
        with _watchdog(server.process):
            server.process.wait()
        assert "Traceback" not in server.logs()


@pytest.mark.anyio
async def test_an_answer_whose_client_left_before_its_response_began_does_not_hold_the_stop(
    tmp_path: Path, llm: LlmServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The client hung up while its answer was being searched for. A server of ASGI 2.4
    says so by raising OSError from the response's start, so the SSE body, whose ``finally``
    closed the pump, never starts: the model must not stream on for nobody (holding an
    answer slot), nor a stop wait for it. The ASGI app is called as such a server calls it."""
    settings = load_settings(env=FAST_ENV, overrides=_llm_settings(llm, build_corpus(tmp_path)))
    app, drain = build_app(settings), Drain()
    body = json.dumps({"question": QUESTION, "stream": True}).encode()
    received = [{"type": "http.request", "body": body, "more_body": False}]
    started = anyio.Event()

    async def receive() -> dict[str, Any]:
        if not received:
            await anyio.sleep_forever()
        return received.pop(0)

    async def send(message: dict[str, Any]) -> None:
        started.set()
        raise OSError("the client has gone")  # ASGI 2.4: send after a disconnect

    try:
        asgi = create_app(settings, app=app, drain=drain, allow_unauthenticated=True)
        with anyio.fail_after(SAFETY_S), contextlib.suppress(ClientDisconnect):
            await asgi(_scope("/api/ask", len(body)), receive, send)
        assert started.is_set()  # the answer had begun: its pump was running
        with caplog.at_level(logging.WARNING, "knowhub.server"):
            await drain.end(SAFETY_S, hurry=lambda: True)  # would cut short a wait: none
        assert not caplog.records, caplog.text  # "1 answer(s) in flight", "still running"
    finally:
        app.close()


def _llm_settings(llm: LlmServer, data: Path) -> dict[str, Any]:
    """The settings of :func:`llm_env`, for ``data``."""
    prefix = "KNOWHUB_LLM__"
    model = {f"llm.{k.removeprefix(prefix).lower()}": v for k, v in llm_env(llm).items()}
    return {"data_dir": data, **model}


def _scope(path: str, length: int) -> dict[str, Any]:
    """A POST's ASGI scope, as a server of ASGI 2.4 makes it."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(length).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
