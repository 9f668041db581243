"""A fake chat-model server over real HTTP: OpenAI-compatible, Azure OpenAI and Ollama.

One stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0), in a thread, speaks all three
protocols by path, as the real servers do:

* ``POST …/chat/completions`` (any prefix: ``/v1`` as OpenAI/vLLM, none as DeepSeek):
  a ``chat.completion`` JSON, or with ``stream: true`` server-sent events
  (``data: {chunk}`` with ``choices[0].delta.content``, then ``data: [DONE]``).
* ``POST /openai/deployments/{deployment}/chat/completions?api-version=…``: Azure, the
  same format, keyed by the ``api-key`` header; streams open with Azure's
  ``prompt_filter_results`` chunk (empty ``choices``).
* ``POST /api/chat``: Ollama's native JSON, or NDJSON lines ending with ``done: true``.

Streams use chunked transfer encoding, one HTTP chunk per token, flushed, with
``token_delay_s`` between tokens so time-to-first-token is measurable.

The answer is ``answer`` (text, or a function of the last user message); when JSON is
requested and the answer is not a JSON object it is wrapped as ``{"answer": …}``. A
``script`` (a function of the whole request body) plays a tool-calling model instead: it
returns text or :class:`ToolReply` calls (with any text before them), which the server
sends in the protocol's format, whole or streamed (a call's arguments in several deltas),
with ``finish_reason: "tool_calls"``. Tool conversations are checked as the real servers
check them, and rejected with their 400s (:mod:`knowhub.testing.llm_tools_wire`).
With ``api_key`` set, a missing or wrong key is answered 401 the way each server does.
``fail`` makes the first ``times`` requests (every one with ``times=None``) misbehave:

``hang``         no answer at all until the test ends (give the client a short timeout)
``stall``        a stream sends its first token, then nothing (a whole answer: as hang)
``429``          429 with ``Retry-After: 0`` (or ``retry_after``)
``500``, ``502`` that status with the server's JSON error body
``reset``        the connection is closed without an answer
``not-json``     200 with an HTML page
``bad-chunk``    a truncated JSON body, or a stream whose second chunk is truncated JSON
``error-chunk``  a stream whose second chunk is the server's error object
``empty``        an empty answer (content ``""``)
``cut``          a stream that ends cleanly right after its first token, unfinished
``no-tools``     a request offering tools is refused with a 400, as Ollama refuses for
                 a model without tool support (vLLM without its tool parser, Azure for
                 a model without tools)

Every request is recorded (path, query, headers with credential values redacted,
body, and whether its key was right) for assertions.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from knowhub.testing.llm_tools_wire import Reply, Script, ToolReply, no_tools, split_reply
from knowhub.testing.llm_wire import (
    Answer,
    Calls,
    answer_text,
    error,
    error_body,
    error_frame,
    frames,
    invalid,
    route,
    tokens,
    unauthorized,
    whole,
)

__all__ = [
    "ANSWER",
    "FAILS",
    "LlmServer",
    "Reply",
    "Request",
    "Script",
    "ToolReply",
    "closed_url",
    "serve",
    "tokens",
]

ANSWER = "Database backups are taken every six hours and kept for thirty days [1]."
FAILS = (
    "hang",
    "stall",
    "429",
    "500",
    "502",
    "reset",
    "not-json",
    "bad-chunk",
    "error-chunk",
    "empty",
    "cut",
    "no-tools",
)

_CREDENTIALS = ("authorization", "api-key")


@dataclass
class Request:
    """One request as the server saw it."""

    protocol: str  # "openai", "azure" or "ollama" ("?" for an unknown path)
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names; credential values are "<redacted>"
    body: Any
    auth: str  # "ok", "missing", "wrong", or "-" when the server wants no key

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


@dataclass
class LlmServer:
    """A running fake server; ``requests`` fills as requests arrive."""

    url: str
    deployment: str
    requests: list[Request] = field(default_factory=list)

    @property
    def openai_base(self) -> str:
        """The ``llm.base_url`` of the openai provider (an API root ending in /v1)."""
        return self.url + "/v1"

    @property
    def last(self) -> Request:
        return self.requests[-1]


@dataclass
class _Plan:
    """How the server behaves (the arguments of :func:`serve`), and what it has served."""

    answer: Answer
    script: Script | None
    api_key: str | None
    deployment: str
    token_delay_s: float
    fail: str | None
    times: int | None
    echo_key: bool
    retry_after: str
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    served: int = 0
    calls_made: int = 0

    def next_mode(self) -> str | None:
        """The failure mode of the request now being answered (None: answer it well)."""
        with self.lock:
            self.served += 1
            failing = self.fail is not None and (self.times is None or self.served <= self.times)
        return self.fail if failing else None

    def with_ids(self, calls: list[ToolReply]) -> Calls:
        """``calls`` with their ids: given, or made up, unique across the server's life."""
        with self.lock:
            first = self.calls_made
            self.calls_made += len(calls)
        return [(c.id or f"call_{first + n}", c) for n, c in enumerate(calls)]


@contextmanager
def serve(
    answer: Answer = ANSWER,
    *,
    script: Script | None = None,
    api_key: str | None = None,
    deployment: str = "gpt-4o-mini-prod",
    token_delay_s: float = 0.0,
    fail: str | None = None,
    times: int | None = 1,
    echo_key: bool = False,
    retry_after: str = "0",
) -> Iterator[LlmServer]:
    """Run the fake server for the ``with`` block.

    Args:
        answer: the answer text, or a function of the last user message's content.
        script: the model's turn as a function of the request body (parsed JSON, in the
            protocol's format): text, or a list of text and :class:`ToolReply` calls.
            Overrides ``answer``; an exception it raises is answered as a 500 naming it.
        api_key: the key every request must carry (None: no key checked).
        deployment: the Azure deployment that exists.
        token_delay_s: pause after each streamed token.
        fail: a failure mode from :data:`FAILS`.
        times: how many requests fail (None: all of them).
        echo_key: 401 messages repeat the rejected key in full (as a careless proxy
            might), to check that clients scrub it from their errors.
        retry_after: the ``Retry-After`` header of the ``429`` failure.
    """
    if fail is not None and fail not in FAILS:
        raise ValueError(f"unknown failure mode {fail!r}; one of {FAILS}")
    plan = _Plan(
        answer, script, api_key, deployment, token_delay_s, fail, times, echo_key, retry_after
    )
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.plan = plan
    httpd.record = LlmServer(f"http://127.0.0.1:{httpd.server_address[1]}", deployment)
    # A short poll interval: shutdown() waits for the loop's next poll (0.5 s by default).
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield httpd.record
    finally:
        plan.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    plan: _Plan
    record: LlmServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stops reading a stream (or times out) is expected, not a failure.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streams, as the real servers send them
    server: _Server

    def do_POST(self) -> None:
        plan = self.server.plan
        parts = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        protocol, deployment_asked = route(parts.path)
        auth = self._auth(protocol)
        headers = {
            k.lower(): "<redacted>" if k.lower() in _CREDENTIALS else v
            for k, v in self.headers.items()
        }
        request = Request(protocol, parts.path, dict(parse_qsl(parts.query)), headers, body, auth)
        self.server.record.requests.append(request)
        if protocol == "?":
            return self._json(404, {"error": {"message": f"no route {parts.path}"}})
        if auth in ("missing", "wrong"):
            rejected = unauthorized(protocol, auth, self._key(protocol), plan.echo_key)
            return self._json(401, rejected)
        problem = invalid(protocol, parts.query, deployment_asked, plan.deployment, body)
        if problem is not None:
            return self._json(*problem)
        return self._answer(request, plan.next_mode())

    def _answer(self, request: Request, mode: str | None) -> None:
        plan, protocol, body = self.server.plan, request.protocol, request.body
        if mode in ("hang", "stall") and not (mode == "stall" and request.stream):
            plan.release.wait(10)
            self.close_connection = True
            return None
        if mode == "reset":
            self.close_connection = True
            return None
        if mode in ("429", "500", "502"):
            wait = {"Retry-After": plan.retry_after} if mode == "429" else {}
            return self._json(int(mode), error_body(protocol, int(mode)), wait)
        if mode == "not-json":
            return self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        if mode == "no-tools" and body.get("tools"):
            return self._json(*no_tools(protocol, body))
        try:
            text, calls = self._reply(protocol, body)
        except Exception as exc:  # the test's script failed: say so, not a dropped connection
            return self._json(500, error(protocol, f"the script failed: {exc!r}", "server_error"))
        if mode == "empty":
            text, calls = "", []
        if request.stream:
            return self._stream(protocol, body, text, calls, mode)
        payload = whole(protocol, body, text, calls)
        if mode == "bad-chunk":
            return self._send(200, json.dumps(payload).encode()[:40], "application/json")
        return self._json(200, payload)

    def _reply(self, protocol: str, body: dict[str, Any]) -> tuple[str, Calls]:
        """The model's turn: the scripted one, else the answer (text only)."""
        plan = self.server.plan
        if plan.script is None:
            return answer_text(plan.answer, body, protocol), []
        text, calls = split_reply(plan.script(body))
        return text, plan.with_ids(calls)

    def _key(self, protocol: str) -> str | None:
        if protocol == "azure":
            return self.headers.get("api-key")
        value = self.headers.get("Authorization")
        return value.removeprefix("Bearer ") if value else None

    def _auth(self, protocol: str) -> str:
        api_key = self.server.plan.api_key
        if api_key is None:
            return "-"
        sent = self._key(protocol)
        if not sent:
            return "missing"
        return "ok" if sent == api_key else "wrong"

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    def _send(
        self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(
        self, protocol: str, body: dict[str, Any], text: str, calls: Calls, mode: str | None
    ) -> None:
        kind = "application/x-ndjson" if protocol == "ollama" else "text/event-stream"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame, token in frames(protocol, body, tokens(text), calls):
            self._chunk(frame)
            if token:  # a piece of text or of a call's arguments
                if mode in ("stall", "bad-chunk", "error-chunk", "cut"):
                    break  # misbehave right after the first token
                time.sleep(self.server.plan.token_delay_s)
        else:
            self._chunk(b"")  # the last chunk: the body is complete
            return
        self._break_off(protocol, mode)

    def _break_off(self, protocol: str, mode: str | None) -> None:
        """End a stream the way ``mode`` misbehaves, after its first token."""
        if mode == "stall":
            self.server.plan.release.wait(10)
        elif mode == "bad-chunk" and protocol == "ollama":
            self._chunk(b'{"message": {"content": "x\n')
        elif mode == "bad-chunk":
            self._chunk(b'data: {"choices": [{"delta": {"content": "x\n\n')
        elif mode == "error-chunk":
            self._chunk(error_frame(protocol))
        if mode != "stall":
            self._chunk(b"")  # "cut" ends here: a complete body, an unfinished answer
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


def closed_url() -> str:
    """A URL nothing listens on (the port was bound, then released): connection refused."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = httpd.server_address[1]
    httpd.server_close()
    return f"http://127.0.0.1:{port}"
