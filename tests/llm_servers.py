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
requested and the answer is not a JSON object it is wrapped as ``{"answer": …}``.
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

Every request is recorded (path, query, headers with credential values redacted,
body, and whether its key was right) for assertions.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

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
)
Answer = str | Callable[[str], str]

_AZURE = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")
_CREDENTIALS = ("authorization", "api-key")
_TOKEN = re.compile(r"\S+\s*|\s+")


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


def tokens(text: str) -> list[str]:
    """The pieces a stream sends: words with their trailing space; joined they are ``text``."""
    return _TOKEN.findall(text)


@contextmanager
def serve(
    answer: Answer = ANSWER,
    *,
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
    release = threading.Event()
    lock = threading.Lock()
    served = [0]
    server: LlmServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # chunked streams, as the real servers send them

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", errors="replace")
            protocol, deployment_asked = _protocol(parts.path)
            auth = self._auth(protocol)
            headers = {
                k.lower(): "<redacted>" if k.lower() in _CREDENTIALS else v
                for k, v in self.headers.items()
            }
            request = Request(
                protocol, parts.path, dict(parse_qsl(parts.query)), headers, body, auth
            )
            server.requests.append(request)
            if protocol == "?":
                return self._json(404, {"error": {"message": f"no route {parts.path}"}})
            if auth in ("missing", "wrong"):
                return self._json(401, _unauthorized(protocol, auth, self._key(protocol), echo_key))
            problem = _invalid(protocol, parts.query, deployment_asked, deployment, body)
            if problem is not None:
                return self._json(*problem)
            with lock:
                served[0] += 1
                failing = fail is not None and (times is None or served[0] <= times)
            mode = fail if failing else None
            text = _answer_text(answer, body, protocol)
            if mode in ("hang", "stall") and not (mode == "stall" and request.stream):
                release.wait(10)
                self.close_connection = True
                return None
            if mode == "reset":
                self.close_connection = True
                return None
            if mode in ("429", "500", "502"):
                wait = {"Retry-After": retry_after} if mode == "429" else {}
                return self._json(int(mode), _error_body(protocol, int(mode)), wait)
            if mode == "not-json":
                return self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
            if mode == "empty":
                text = ""
            if request.stream:
                return self._stream(protocol, body, text, mode)
            payload = _whole(protocol, body, text)
            if mode == "bad-chunk":
                return self._send(200, json.dumps(payload).encode()[:40], "application/json")
            return self._json(200, payload)

        def _key(self, protocol: str) -> str | None:
            if protocol == "azure":
                return self.headers.get("api-key")
            value = self.headers.get("Authorization")
            return value.removeprefix("Bearer ") if value else None

        def _auth(self, protocol: str) -> str:
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

        def _stream(self, protocol: str, body: dict[str, Any], text: str, mode: str | None) -> None:
            kind = "application/x-ndjson" if protocol == "ollama" else "text/event-stream"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pieces = tokens(text)
            first = _first_token(protocol)
            for n, frame in enumerate(_frames(protocol, body, pieces)):
                self._chunk(frame)
                if first <= n < first + len(pieces):  # a token's frame
                    if mode in ("stall", "bad-chunk", "error-chunk"):
                        break  # misbehave right after the first token
                    time.sleep(token_delay_s)
            else:
                self._chunk(b"")  # the last chunk: the body is complete
                return
            if mode == "stall":
                release.wait(10)
            elif mode == "bad-chunk" and protocol == "ollama":
                self._chunk(b'{"message": {"content": "x\n')
            elif mode == "bad-chunk":
                self._chunk(b'data: {"choices": [{"delta": {"content": "x\n\n')
            else:
                self._chunk(_error_frame(protocol))
            if mode != "stall":
                self._chunk(b"")
            self.close_connection = True

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    httpd = _Server(("127.0.0.1", 0), Handler)
    server = LlmServer(f"http://127.0.0.1:{httpd.server_address[1]}", deployment)
    # A short poll interval: shutdown() waits for the loop's next poll (0.5 s by default).
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stops reading a stream (or times out) is expected, not a failure.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def closed_url() -> str:
    """A URL nothing listens on (the port was bound, then released): connection refused."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = httpd.server_address[1]
    httpd.server_close()
    return f"http://127.0.0.1:{port}"


def _protocol(path: str) -> tuple[str, str | None]:
    azure = _AZURE.match(path)
    if azure:
        return "azure", azure.group(1)
    if path.endswith("/chat/completions"):
        return "openai", None
    if path == "/api/chat":
        return "ollama", None
    return "?", None


def _invalid(
    protocol: str, query: str, asked: str | None, deployment: str, body: Any
) -> tuple[int, Any] | None:
    """The 4xx the real server gives a request it rejects, or None."""
    if protocol == "azure":
        if "api-version" not in dict(parse_qsl(query)):
            return 404, {"error": {"code": "404", "message": "Resource not found"}}
        if asked != deployment:
            return 404, {
                "error": {
                    "code": "DeploymentNotFound",
                    "message": (
                        "The API deployment for this resource does not exist. If you created the "
                        "deployment within the last 5 minutes, please wait a moment and try again."
                    ),
                }
            }
    if not isinstance(body, dict):
        return 400, _error(protocol, "could not parse the JSON body of your request")
    if protocol != "azure" and not body.get("model"):
        return 400, _error(
            protocol,
            "model is required" if protocol == "ollama" else "you must provide a model parameter",
        )
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(
            isinstance(m, dict)
            and m.get("role") in ("system", "user", "assistant")
            and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        return 400, _error(protocol, "messages must be a non-empty list of {role, content}")
    wants_json = body.get("response_format") == {"type": "json_object"}
    if wants_json and not any("json" in m["content"].lower() for m in messages):
        return 400, _error(
            protocol,
            "'messages' must contain the word 'json' in some form, "
            "to use 'response_format' of type 'json_object'.",
        )
    return None


def _error(protocol: str, message: str, kind: str = "invalid_request_error") -> Any:
    if protocol == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _error_body(protocol: str, status: int) -> Any:
    messages = {
        429: "Rate limit reached for requests. Please try again in 0s.",
        500: "The server had an error while processing your request. Sorry about that!",
        502: "upstream model server unavailable",
    }
    return _error(protocol, messages[status], "server_error")


_AZURE_401 = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a "
    "valid key for an active subscription and use a correct regional API endpoint for your "
    "resource."
)


def _unauthorized(protocol: str, auth: str, sent: str | None, echo: bool) -> Any:
    if protocol == "azure":
        message = _AZURE_401 + (f" Key: {sent}" if echo and sent else "")
        return {"error": {"code": "401", "message": message}}
    if auth == "missing":
        return _error(protocol, "You didn't provide an API key.")
    shown = sent if echo else f"{(sent or '')[:3]}***{(sent or '')[-2:]}"
    return _error(protocol, f"Incorrect API key provided: {shown}.")


def _answer_text(answer: Answer, body: Any, protocol: str) -> str:
    if not isinstance(body, dict):
        return ""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    text = answer(users[-1] if users else "") if callable(answer) else answer
    wants_json = (
        body.get("format") == "json"
        if protocol == "ollama"
        else body.get("response_format") == {"type": "json_object"}
    )
    if wants_json:
        try:
            is_object = isinstance(json.loads(text), dict)
        except ValueError:
            is_object = False
        if not is_object:
            text = json.dumps({"answer": text})
    return text


def _whole(protocol: str, body: dict[str, Any], text: str) -> Any:
    if protocol == "ollama":
        return {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": text},
            "done_reason": "stop",
            "done": True,
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": 20,
            "prompt_eval_duration": 100,
            "eval_count": len(tokens(text)),
            "eval_duration": 800,
        }
    message = {"role": "assistant", "content": text, "refusal": None}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "gpt-4o-mini-2024-07-18"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": len(tokens(text)),
            "total_tokens": 20 + len(tokens(text)),
        },
    }


def _first_token(protocol: str) -> int:
    """Index of the frame carrying the first token (after the opening frames)."""
    return {"openai": 1, "azure": 2, "ollama": 0}[protocol]


def _frames(protocol: str, body: dict[str, Any], pieces: list[str]) -> list[bytes]:
    """Every frame of a stream, in order: opening frames, one per token, closing frames."""
    if protocol == "ollama":
        stamp = {"model": body["model"], "created_at": "2025-01-01T00:00:00.000000Z"}
        lines = [
            {**stamp, "message": {"role": "assistant", "content": p}, "done": False} for p in pieces
        ]
        lines.append(
            {
                **stamp,
                "message": {"role": "assistant", "content": ""},
                "done_reason": "stop",
                "done": True,
                "total_duration": 1000,
                "eval_count": len(pieces),
            }
        )
        return [json.dumps(line).encode() + b"\n" for line in lines]
    model = body.get("model", "gpt-4o-mini-2024-07-18")
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "system_fingerprint": "fp_1",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    events: list[Any] = []
    if protocol == "azure":
        events.append(
            {
                "choices": [],
                "created": 0,
                "id": "",
                "model": "",
                "object": "",
                "prompt_filter_results": [
                    {
                        "prompt_index": 0,
                        "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
                    }
                ],
            }
        )
    events.append(chunk({"role": "assistant", "content": "", "refusal": None}))
    events.extend(chunk({"content": p}) for p in pieces)
    events.append(chunk({}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": 20,
            "completion_tokens": len(pieces),
            "total_tokens": 20 + len(pieces),
        }
        events.append({**base, "choices": [], "usage": usage})
    frames = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events]
    return [*frames, b"data: [DONE]\n\n"]


def _error_frame(protocol: str) -> bytes:
    if protocol == "ollama":
        return json.dumps({"error": "model runner has unexpectedly stopped"}).encode() + b"\n"
    error = _error(protocol, "The model is overloaded. Please try again later.", "server_error")
    return b"data: " + json.dumps(error).encode() + b"\n\n"
