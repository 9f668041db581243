"""A small web server for the crawl's odd answers that nginx is not asked to give (a 503
robots.txt, a ``Location`` that is not a URL, a huge Crawl-delay): the standard library's
``http.server`` in a thread on 127.0.0.1, each path answered as ``routes`` says (changed
between crawls by the test), each request recorded with its headers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html"})


@dataclass
class Stub:
    port: int
    routes: dict[str, Answer]  # by path; any other path: 404
    requests: list[tuple[str, dict[str, str]]]  # (path, headers) of each request, in order

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


def page(title: str, text: str, links: str = "") -> Answer:
    """An HTML page: a heading, a paragraph, and ``links`` (raw HTML) after them."""
    html = f"<html><body><h1>{title}</h1><p>{text}</p>{links}</body></html>"
    return Answer(body=html.encode())


@contextmanager
def stub_site(routes: dict[str, Answer]) -> Iterator[Stub]:
    """Serve ``routes`` for the block (robots.txt included only if the test gives it)."""
    requests: list[tuple[str, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server's name
            requests.append((self.path, dict(self.headers.items())))
            answer = routes.get(self.path, Answer(404, b"not found", {}))
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: object) -> None:
            return None  # the requests are recorded above; stderr stays quiet

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Stub(server.server_address[1], routes, requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
