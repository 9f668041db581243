"""A round-robin HTTP proxy for the tests: each request goes to the next upstream in turn.

What a load balancer without sticky routing does: a client (a browser, httpx) sees one
address while its requests alternate between replicas. Every connection carries one request
(HTTP/1.0 answers, closed at their end), so even a browser's keep-alive cannot pin it to a
replica. Responses stream through as the upstream writes them (Server-Sent Events too).
Each request's upstream is recorded, so a test can show its requests really alternated.
"""

from __future__ import annotations

import http.client
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.helpers import WAIT_S

__all__ = ["RoundRobin", "round_robin"]

# Hop-by-hop headers (RFC 9110 §7.6.1) stay with their connection; the body is re-sent
# as it is read, so its framing is the proxy's own.
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}


class RoundRobin:
    """The running proxy: its ``url``, and which upstream served each request, in order."""

    def __init__(self, upstreams: list[str]) -> None:
        self.upstreams = upstreams
        self.served: list[tuple[str, str]] = []  # (upstream, method and path)
        self._next = itertools.cycle(upstreams)
        self._lock = threading.Lock()
        self.url = ""

    def pick(self, request: str) -> str:
        with self._lock:
            upstream = next(self._next)
            self.served.append((upstream, request))
        return upstream

    def served_by(self, prefix: str) -> set[str]:
        """The upstreams that served the requests starting with ``prefix`` (``GET /ui``)."""
        with self._lock:
            return {u for u, r in self.served if r.startswith(prefix)}


def _handler(proxy: RoundRobin) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def _forward(self) -> None:
            target = urlsplit(proxy.pick(f"{self.command} {self.path}"))
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            upstream = http.client.HTTPConnection(target.netloc, timeout=WAIT_S)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                self.send_response_only(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in _HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Connection", "close")
                self.end_headers()
                while chunk := answer.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
            finally:
                upstream.close()

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward  # noqa: N815 (http.server's)

        def log_message(self, format: str, *args: object) -> None:  # quiet: pytest shows stderr
            pass

    return Forward


@contextmanager
def round_robin(*upstreams: str) -> Iterator[RoundRobin]:
    """A proxy on a free 127.0.0.1 port in front of ``upstreams`` until the block ends."""
    proxy = RoundRobin(list(upstreams))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    server.daemon_threads = True
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="round-robin", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
