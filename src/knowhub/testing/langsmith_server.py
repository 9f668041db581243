"""A LangSmith-compatible run collector over real HTTP, for the LangSmith trace sink's tests.

One stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (port 0), in a thread. It answers what the
``langsmith`` client sends for a run created whole (``Client.create_run`` with no
``trace_id``/``dotted_order``, as knowhub's sink sends it): ``POST /runs`` with the run as
JSON and the key in ``x-api-key``, answered ``202 {"message": "Run created"}`` as the
service does. With ``api_key`` set, a missing or wrong key is answered ``401``. Any other
request (a batched ``/runs/batch`` or ``/runs/multipart``, a ``GET /info``) is recorded and
answered 404, so a client that starts sending runs another way fails the test that expected
them instead of passing on an empty record.

Every request is recorded (method, path, headers with the key redacted, the body as sent
and parsed, whether its key was right) for assertions; :attr:`LangSmithServer.runs` are
the runs accepted.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LangSmithServer", "Request", "serve"]

_KEY_HEADER = "x-api-key"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]  # the key's value as "***"
    raw: bytes  # the body exactly as sent
    body: Any  # parsed JSON (None: no body, or not JSON)
    key_ok: bool


@dataclass
class LangSmithServer:
    url: str = ""
    api_key: str | None = None
    requests: list[Request] = field(default_factory=list)

    @property
    def runs(self) -> list[dict[str, Any]]:
        """The runs accepted, in the order they came."""
        return [r.body for r in self.requests if r.path == "/runs" and r.key_ok]


@contextmanager
def serve(api_key: str | None = None) -> Iterator[LangSmithServer]:
    """A running collector; ``server.url`` is the sink's ``langsmith_endpoint``."""
    state = LangSmithServer(api_key=api_key)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self._answer()

        def do_GET(self) -> None:
            self._answer()

        def _answer(self) -> None:
            request = _read(self, state.api_key)
            with lock:
                state.requests.append(request)
            if not request.key_ok:
                _reply(self, 401, {"detail": "Invalid token"})
            elif self.command == "POST" and self.path == "/runs" and isinstance(request.body, dict):
                _reply(self, 202, {"message": "Run created"})
            else:
                _reply(self, 404, {"detail": "Not Found"})

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _read(handler: BaseHTTPRequestHandler, api_key: str | None) -> Request:
    raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    try:
        body = json.loads(raw) if raw else None
    except ValueError:  # recorded as sent: the test says what was wrong with it
        body = None
    key = handler.headers.get(_KEY_HEADER)
    headers = {k: ("***" if k.lower() == _KEY_HEADER else v) for k, v in handler.headers.items()}
    return Request(
        handler.command,
        handler.path,
        headers,
        raw,
        body,
        key_ok=api_key is None or key == api_key,
    )


def _reply(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
