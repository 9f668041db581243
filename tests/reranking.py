"""Test support for reranking: hits, deterministic fake rerankers and real HTTP servers.

The servers speak the rerank and chat-completion protocols faithfully; each runs stdlib
``http.server`` on 127.0.0.1 (port 0) in a thread. Relevance is word overlap between
query and passage (ties go to the shorter passage), so tests know the right order.
``fail`` makes a server misbehave: ``"500"``, ``"not-json"``, or ``"hang"`` (it answers
nothing until the test ends: give the client a short timeout).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from knowhub.models import Hit
from knowhub.providers.rerankers.base import Reranker
from knowhub.testing.hits import hit
from tests.helpers import WAIT_S

Respond = Callable[[str, dict[str, Any]], tuple[int, Any]]
WORD = re.compile(r"\w+")


def relevance(query: str, passage: str) -> float:
    """Shared words, a little less for longer passages: a deterministic stand-in."""
    words = set(WORD.findall(query.lower()))
    found = WORD.findall(passage.lower())
    return len(words & set(found)) - len(found) / 1000


def hits_for(texts: list[str]) -> list[Hit]:
    """Hits in fused order (first = fused rank 1), as the pipeline hands them over."""
    return [
        hit(
            text,
            chunk_id=f"c{i}",
            score=1.0 - i / 10,
            source=f"{i}.md",
            fused_score=1.0 - i / 10,
            fused_rank=i + 1,
        )
        for i, text in enumerate(texts)
    ]


class OverlapReranker(Reranker):
    """Deterministic fake: scores by :func:`relevance`; records what it was asked."""

    model_id = "fake:overlap"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def _score(self, query: str, texts: list[str]) -> list[float]:
        self.calls.append((query, texts))
        return [relevance(query, text) for text in texts]


class BrokenReranker(Reranker):
    """Fails like a backend library would (a plain exception, not a knowhub error)."""

    model_id = "fake:broken"

    def _score(self, query: str, texts: list[str]) -> list[float]:
        raise RuntimeError("CUDA out of memory (pretend)")


class BlockedReranker(Reranker):
    """Blocks until ``release`` is set, to exercise the stage's deadline without sleeps."""

    model_id = "fake:blocked"

    def __init__(self) -> None:
        self.release = threading.Event()

    def _score(self, query: str, texts: list[str]) -> list[float]:
        self.release.wait(WAIT_S)
        return [0.0] * len(texts)


@dataclass
class Server:
    url: str
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)


@contextmanager
def serve(respond: Respond, fail: str | None = None) -> Iterator[Server]:
    """Run a JSON server; ``respond(path, body)`` gives (status, payload)."""
    release = threading.Event()
    server: Server

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw)
            server.requests.append((self.path, dict(self.headers.items()), body))
            if fail == "hang":
                release.wait(WAIT_S)
                return
            if fail == "500":
                status, payload = 500, {"error": "model crashed"}
            elif fail == "not-json":
                status, payload = 200, "<html>gateway</html>"
            else:
                status, payload = respond(self.path, body)
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server = Server(f"http://127.0.0.1:{httpd.server_address[1]}")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def closed_port_url() -> str:
    """A URL nothing listens on (the port was bound, then released)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = httpd.server_address[1]
    httpd.server_close()
    return f"http://127.0.0.1:{port}/rerank"


def _ranked(query: str, texts: list[str]) -> list[tuple[int, float]]:
    scored = [(i, relevance(query, t)) for i, t in enumerate(texts)]
    return sorted(scored, key=lambda pair: -pair[1])


def jina(path: str, body: dict[str, Any], bad_shape: bool = False) -> tuple[int, Any]:
    """POST /v1/rerank as api.jina.ai answers it (also vLLM and Infinity)."""
    if path != "/v1/rerank":
        return 404, {"detail": "Not Found"}
    if not isinstance(body.get("query"), str) or not isinstance(body.get("documents"), list):
        return 422, {"detail": "query and documents are required"}
    top_n = body.get("top_n", len(body["documents"]))
    results = [
        {"index": i, "document": {"text": body["documents"][i]}, "relevance_score": s}
        for i, s in _ranked(body["query"], body["documents"])[:top_n]
    ]
    if bad_shape:
        results = results[:-1]
    return 200, {"model": body.get("model"), "usage": {"total_tokens": 42}, "results": results}


def cohere(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST /v2/rerank as api.cohere.com answers it (``model`` is required)."""
    if path != "/v2/rerank":
        return 404, {"message": "not found"}
    if not body.get("model") or not isinstance(body.get("documents"), list):
        return 400, {"message": "invalid request: model and documents are required"}
    top_n = body.get("top_n", len(body["documents"]))
    results = [
        {"index": i, "relevance_score": s}
        for i, s in _ranked(body["query"], body["documents"])[:top_n]
    ]
    meta = {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}
    return 200, {"id": "rr-1", "results": results, "meta": meta}


def tei(path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST /rerank as Hugging Face text-embeddings-inference answers it."""
    if path != "/rerank":
        return 404, {"error": "Not Found", "error_type": "not_found"}
    if not isinstance(body.get("texts"), list) or not body["texts"]:
        return 422, {"error": "`texts` cannot be empty", "error_type": "Validation"}
    return 200, [{"index": i, "score": s} for i, s in _ranked(body["query"], body["texts"])]


def chat(reply: Callable[[str, list[str]], str] | None = None) -> Respond:
    """POST /v1/chat/completions (OpenAI-compatible); grades 0-10 by word overlap.

    ``reply(query, passages)`` replaces the model's message content.
    """

    def respond(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": "not found"}}
        if not body.get("model") or not body.get("messages"):
            return 400, {"error": {"message": "model and messages are required"}}
        user = body["messages"][-1]["content"]
        query = user.split("\n", 1)[0].removeprefix("Query: ")
        passages = re.findall(r"^\[\d+\] (.*)$", user, flags=re.MULTILINE)
        if reply is not None:
            content = reply(query, passages)
        else:
            grades = [min(10, max(0, round(relevance(query, p) * 2))) for p in passages]
            content = json.dumps({"scores": grades})
        message = {"role": "assistant", "content": content}
        return 200, {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    return respond
