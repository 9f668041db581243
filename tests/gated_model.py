"""A chat model (OpenAI-compatible) that holds its stream after the first token until the
test lets it go on: how a test shows, by ordering and not by a clock, that tokens reach
its client as the model makes them. A server that gathered the whole answer first would
send no token before the model went on, and the model goes on only when the client has
one (else it gives up waiting after ``WAIT_S`` and says so in ``waited_out``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from knowhub.testing.llm_server import ANSWER
from knowhub.testing.llm_wire import frames, tokens, whole
from tests.helpers import WAIT_S


@dataclass
class GatedModel:
    openai_base: str
    go_on: threading.Event = field(default_factory=threading.Event)
    waited_out: bool = False  # a stream gave up waiting for go_on: no token came through


@contextmanager
def gated_model(answer: str = ANSWER) -> Iterator[GatedModel]:
    """Serve ``answer`` on 127.0.0.1 for the block: whole, or streamed in two parts."""
    model: GatedModel

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not body.get("stream"):
                data = json.dumps(whole("openai", body, answer, [])).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            held = False
            for frame, is_token in frames("openai", body, tokens(answer), []):
                self._chunk(frame)
                if is_token and not held:
                    held = True
                    model.waited_out |= not model.go_on.wait(WAIT_S)
            self._chunk(b"")

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    model = GatedModel(f"http://127.0.0.1:{httpd.server_address[1]}/v1")
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield model
    finally:
        model.go_on.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
