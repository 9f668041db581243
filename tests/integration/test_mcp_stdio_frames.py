"""``serve mcp`` on stdio answers every frame that expects an answer, exactly once.

The SDK's stdio reader drops a line it cannot parse: a lone surrogate escape (JavaScript's
``JSON.stringify`` of half an emoji), a frame cut short, a batch, an id that is not an
integer or a string. The client's call then waits forever. Each is answered as the streamable
HTTP transport and JSON-RPC 2.0 say (-32700, -32600, -32602), with the frame's id when it can
be read, and the session goes on. A real server process, raw lines on its stdin.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_raw_stdio import PROTOCOL, RawStdio, answers_to, request
from tests.mcp_stdio_helpers import CORPUS, make_corpus

PARSE, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
QUERY = "query_knowledge_hub"
# A search waits for the first sync (however loaded the machine): every one finds the file.
SYNCED = {"KNOWHUB_SERVER__FIRST_SYNC_WAIT_S": "300"}
CORPUS_ONE = {"backups.md": CORPUS["backups.md"]}


def _call(ident: object, tool: str, arguments: dict[str, Any]) -> str:
    return request(ident, "tools/call", {"name": tool, "arguments": arguments})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawStdio]:
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    with RawStdio(root, env=SYNCED) as raw:
        raw.initialize()
        yield raw


# (frame, the id its answer carries, the error code, a piece of the message)
BROKEN = [
    (
        _call(2, QUERY, {"query": "a\ud800b"}),
        2,
        INVALID_PARAMS,
        "params.arguments.query: contains an unpaired surrogate (U+D800) at position 1",
    ),
    (_call(3, QUERY, {"query": "nightly backup"})[:60], 3, PARSE, "Parse error"),
    ('{"jsonrpc": "2.0", "method": "tools/call", "par', None, PARSE, "Parse error"),
    ('{"jsonrpc": "2.0", "id": 12', None, PARSE, "Parse error"),  # 12 may be cut from 123
    ("{not json", None, PARSE, "Parse error"),
    ("5", None, INVALID_REQUEST, "a JSON object"),
    ('"tools/list"', None, INVALID_REQUEST, "a JSON object"),
    ("[]", None, INVALID_REQUEST, "empty batch"),
    ('{"jsonrpc": "1.0", "id": 5, "method": "tools/list"}', 5, INVALID_REQUEST, '"2.0"'),
    (
        '{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "x"}',
        6,
        INVALID_REQUEST,
        '"params"',
    ),
    ('{"jsonrpc": "2.0", "id": 7, "method": 7}', 7, INVALID_REQUEST, '"method"'),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', 1.5, INVALID_REQUEST, '"id"'),
    ('{"jsonrpc": "2.0", "\\u0069d": 2.5, "method": "tools/list"}', 2.5, INVALID_REQUEST, '"id"'),
    ('{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', None, INVALID_REQUEST, '"id"'),
    ('{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', None, INVALID_REQUEST, '"id"'),
    ('{"jsonrpc": "2.0", "id": 8}', None, INVALID_REQUEST, '"method"'),
    (
        '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"a": '
        + "[" * 5000
        + "]" * 5000
        + "}}",
        9,
        PARSE,
        "Parse error",
    ),
]


def test_each_frame_the_sdk_cannot_read_is_answered_and_the_session_goes_on(
    server: RawStdio,
) -> None:
    for n, (frame, ident, code, piece) in enumerate(BROKEN):
        server.send(frame)  # answered before the next line is read: the n-th error is its

        def errors(got: list[Any], n: int = n) -> list[Any]:
            found = [m for m in got if "error" in m]
            return found if len(found) > n else []

        answer = server.wait_for(errors, f"an answer to frame {n}")[n]
        assert answer["id"] == ident and type(answer["id"]) is type(ident), (n, answer)
        assert answer["error"]["code"] == code, (n, answer)
        assert piece in answer["error"]["message"], (n, answer)
        server.send(_call(f"after {n}", QUERY, {"query": "nightly backup"}))
        after = server.answer(f"after {n}")
        assert after["result"].get("isError") is not True, (n, after)
    assert server.close() == 0, server.stderr()
    assert sum(1 for m in server.received if "error" in m) == len(BROKEN), server.received
    assert "Traceback" not in server.stderr()


# Notifications and responses the SDK cannot read: JSON-RPC answers neither.
UNANSWERED = [
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "a\ud800"}},
    {"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\udfff"}},
    {"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": 1.5, "\ud83d": 1}},
    {"jsonrpc": "2.0", "id": 77, "result": {"a": "x\ud83d"}},
    {"jsonrpc": "2.0", "id": "78", "error": {"code": 1, "message": "\ud800"}},
]


def test_a_notification_or_response_the_sdk_cannot_read_gets_no_answer(
    server: RawStdio,
) -> None:
    for n, message in enumerate(UNANSWERED):
        server.send(json.dumps(message))  # a lone surrogate, as the escape JavaScript writes
        server.send(_call(f"after {n}", QUERY, {"query": "nightly backup"}))
        after = server.answer(f"after {n}")  # in order: an answer to the frame came first
        assert after["result"].get("isError") is not True, (n, after)
    assert server.close() == 0, server.stderr()
    assert not [m for m in server.received if "error" in m], server.received
    assert "Traceback" not in server.stderr()


def test_a_batch_is_refused_with_one_error_per_request_in_it(server: RawStdio) -> None:
    batch = [
        json.loads(request(1, "tools/list")),
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        json.loads(request("two", "ping")),
    ]
    server.send(json.dumps(batch))
    frame = server.wait_for(lambda got: [f for f in got if isinstance(f, list)], "a batch")[0]
    assert [m["id"] for m in frame] == [1, "two"]
    assert {m["error"]["code"] for m in frame} == {INVALID_REQUEST}
    assert "batch" in frame[0]["error"]["message"]


# -- the fuzz ---------------------------------------------------------------------------

WRONG = {  # JSON Schema type -> values of other types
    "string": [5, -1.5, True, None, [], {}, ["a"], {"a": 1}],
    "integer": ["5", 1.5, True, None, [], {}, 10**40, "x" * 300],
    "number": ["0.5", True, [], {}, None],
    "object": ["x", 5, [1, 2], True],
    "array": ["x", 5, {"a": 1}],
    "boolean": ["yes", 5, [], {}],
}


@dataclass
class Book:
    """What was sent, and what each frame must get back."""

    once: list[object] = field(default_factory=list)  # ids answered exactly once
    null: int = 0  # frames answered with id null
    either: list[object] = field(default_factory=list)  # id or null (a frame cut short)
    batches: int = 0  # frames answered with one JSON array
    frames: list[str] = field(default_factory=list)


class Fuzz:
    """Seeded frames over every tool's schema (from ``tools/list``: one source of truth)."""

    def __init__(self, seed: int, tools: list[dict[str, Any]]) -> None:
        self.rng = random.Random(seed)
        self.tools = tools
        self.book = Book()
        self._n = 0

    def ident(self) -> object:
        self._n += 1
        kind = self.rng.randrange(4)
        if kind == 0:
            return 10 ** self.rng.randrange(20, 400) + self._n  # huge
        if kind == 1:
            return -(10**30) - self._n
        if kind == 2:
            return f"id-{self._n}-{'ж' * self.rng.randrange(0, 2000)}"
        return self._n

    def add(self, frame: str, expect: str, ident: object = None) -> None:
        self.book.frames.append(frame)
        if expect == "once":
            self.book.once.append(ident)
        elif expect == "null":
            self.book.null += 1
        elif expect == "either":
            self.book.either.append(ident)

    def wrong_argument(self) -> None:
        tool = self.rng.choice(self.tools)
        props: dict[str, Any] = tool["inputSchema"].get("properties", {})
        self.wrong(tool, self.rng.choice(sorted(props)) if props else None)

    def wrong(self, tool: dict[str, Any], name: str | None) -> None:
        """A call of ``tool`` with its required arguments, ``name`` given a wrong type."""
        props: dict[str, Any] = tool["inputSchema"].get("properties", {})
        args = {n: _valid(spec) for n, spec in props.items() if n in _required(tool)}
        if name is not None:
            args[name] = self.rng.choice(WRONG[_type(props[name])])
        ident = self.ident()
        self.add(_call(ident, tool["name"], args), "once", ident)

    def surrogate(self) -> None:
        tool = self.rng.choice(self.tools)
        props = tool["inputSchema"].get("properties", {})
        strings = [n for n, s in props.items() if _type(s) == "string"] or ["query"]
        args = {self.rng.choice(strings): "x" + self.rng.choice(["\ud800", "\udfff", "\ud83d"])}
        ident = self.ident()
        self.add(_call(ident, tool["name"], args), "once", ident)

    def truncated(self) -> None:
        ident = self.ident()
        whole = _call(ident, QUERY, {"query": "nightly backup"})
        self.add(whole[: self.rng.randrange(1, len(whole) - 1)], "either", ident)

    def garbage(self) -> None:
        text = "".join(self.rng.choice('{}[]":,ab1 \\') for _ in range(self.rng.randrange(1, 40)))
        try:
            json.loads(text)
        except ValueError:
            self.add(text, "null")
        # (valid JSON by chance is left out: its answer depends on what it parses to)

    def not_an_object(self) -> None:
        self.add(json.dumps(self.rng.choice([5, "x", None, True, 1.5, "tools/list"])), "null")

    def batch(self) -> None:
        members: list[Any] = []
        for _ in range(self.rng.randrange(1, 4)):
            ident = self.ident()
            members.append(json.loads(request(ident, "tools/list")))
            self.book.once.append(ident)
        members.append({"jsonrpc": "2.0", "method": "notifications/whatever"})
        self.book.frames.append(json.dumps(members))
        self.book.batches += 1

    def odd_id(self) -> None:
        self._n += 1
        ident = self.rng.choice([self._n + 0.25, None, True, False, [], {}, 1e400])
        frame = request(ident, "tools/list").replace("Infinity", "1e400")
        echoed = isinstance(ident, float) and ident != float("inf")
        self.add(frame, "once" if echoed else "null", ident)

    def notification(self) -> None:
        method = self.rng.choice(["notifications/cancelled", "notifications/x", "ping"])
        params = self.rng.choice([None, {"requestId": 10**30}, {}])
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.add(json.dumps(message), "none")

    def unreadable_notification(self) -> None:
        """A notification, or a response to the server, with a lone surrogate: the SDK
        cannot read it, and JSON-RPC answers neither."""
        bad = "x" + self.rng.choice(["\ud800", "\udfff", "\ud83d"])
        kind = self.rng.randrange(3)
        message: dict[str, Any] = {"jsonrpc": "2.0"}
        if kind == 0:
            message.update(method="notifications/cancelled", params={"reason": bad})
        else:
            message["id"] = self.ident()
            message.update(
                {"result": {"text": bad}} if kind == 1 else {"error": {"code": 1, "message": bad}}
            )
        self.add(json.dumps(message), "none")

    def unknown_method(self) -> None:
        ident = self.ident()
        self.add(request(ident, self.rng.choice(["foo/bar", "tools/cal", ""])), "once", ident)

    def valid(self) -> None:
        ident = self.ident()
        method = self.rng.choice(["ping", "tools/list", "tools/call"])
        if method == "tools/call":
            self.add(_call(ident, QUERY, {"query": "backup", "top_k": 2}), "once", ident)
        else:
            self.add(request(ident, method), "once", ident)

    def frames(self, count: int) -> Book:
        kinds = [
            self.wrong_argument,
            self.wrong_argument,
            self.surrogate,
            self.truncated,
            self.garbage,
            self.not_an_object,
            self.batch,
            self.odd_id,
            self.notification,
            self.unreadable_notification,
            self.unknown_method,
            self.valid,
        ]
        for tool in self.tools:  # every argument of every tool, then the draw
            for name in sorted(tool["inputSchema"].get("properties", {})):
                self.wrong(tool, name)
        for _ in range(count):
            self.rng.choice(kinds)()
        return self.book


def _type(spec: dict[str, Any]) -> str:
    """A property's JSON type (the first non-null one of an ``anyOf``)."""
    if "type" in spec:
        return str(spec["type"])
    types = [s.get("type") for s in spec.get("anyOf", []) if s.get("type") != "null"]
    return str(types[0]) if types else "string"


def _required(tool: dict[str, Any]) -> set[str]:
    return set(tool["inputSchema"].get("required", []))


def _valid(spec: dict[str, Any]) -> object:
    return {"string": "backup", "integer": 2, "object": {}, "number": 0.5}.get(_type(spec), "x")


def _answered(received: list[Any]) -> list[object]:
    """The id of every answer (a batch's member by member), less the test's own calls."""
    frames = [f for f in received if not (isinstance(f, dict) and "method" in f)]
    ids = [m.get("id") for f in frames for m in (f if isinstance(f, list) else [f])]
    return [i for i in ids if i not in ("init", "tools", "last")]


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


def _settled(received: list[Any], book: Book) -> bool:
    answered = _answered(received)
    expected = len(book.once) + len(book.either) + book.null
    return len(answered) >= expected and all(any(_same(a, i) for a in answered) for i in book.once)


def test_fuzzed_frames_each_get_exactly_one_answer_and_the_server_goes_on(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    with RawStdio(root, env=SYNCED) as server:
        server.initialize()
        server.send(request("tools", "tools/list"))
        tools = server.answer("tools")["result"]["tools"]
        book = Fuzz(36, tools).frames(400)
        for frame in book.frames:
            server.send(frame)
        server.wait_for(lambda got: _settled(got, book), "an answer to every fuzzed frame")
        server.send(_call("last", QUERY, {"query": "nightly backup"}))
        last = server.answer("last")
        assert last["result"]["structuredContent"]["hits"], last
        assert server.close() == 0, server.stderr()[-3000:]
    assert None not in server.received, "a line on stdout that is not JSON"
    assert sum(1 for f in server.received if isinstance(f, list)) == book.batches
    answered = _answered(server.received)
    for ident in book.once:
        assert sum(1 for a in answered if _same(a, ident)) == 1, ident
    cut = sum(1 for a in answered for i in book.either if _same(a, i))
    assert cut + answered.count(None) == len(book.either) + book.null
    assert len(answered) == len(book.once) + len(book.either) + book.null
    assert list(answers_to(server.received, "last")) == [last]
    assert "Traceback" not in server.stderr()


# -- the handshake, answered early from the cache (early.py) ---------------------------


def _hello(name: str) -> dict[str, Any]:
    client = {"name": name, "version": "1"}
    return {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}


@pytest.fixture
def warm(tmp_path: Path) -> Path:
    """A served folder whose data dir holds the handshake cache (a first start filled it)."""
    root = make_corpus(tmp_path, {"backups.md": CORPUS["backups.md"]})
    with RawStdio(root, env=SYNCED) as first:
        first.initialize()
        first.send(request("tools", "tools/list"))
        first.answer("tools")
        assert first.close() == 0, first.stderr()
    assert list((root / "data" / "cache").glob("mcp-handshake-*.json"))
    return root


def test_an_initialize_the_sdk_cannot_read_is_answered_once_with_a_warm_cache(
    warm: Path,
) -> None:
    with RawStdio(warm, env=SYNCED) as server:
        server.send(request(1, "initialize", _hello("x\ud83d")))  # half an emoji
        refused = server.answer(1)
        assert refused["error"]["code"] == INVALID_PARAMS, refused
        server.initialize()  # the client's next try is answered, and the session works
        server.send(request("tools", "tools/list"))
        assert server.answer("tools")["result"]["tools"]
        server.send(_call("last", QUERY, {"query": "nightly backup"}))
        assert server.answer("last")["result"]["structuredContent"]["hits"]
        assert server.close() == 0, server.stderr()
    assert list(answers_to(server.received, 1)) == [refused]
    assert sum(1 for m in server.received if "error" in m) == 1, server.received


def test_a_first_line_opening_with_a_byte_order_mark_is_answered(tmp_path: Path) -> None:
    _bom_first(make_corpus(tmp_path, CORPUS_ONE))


def test_a_first_line_opening_with_a_byte_order_mark_is_answered_once_from_the_cache(
    warm: Path,
) -> None:
    _bom_first(warm)


def _bom_first(root: Path) -> None:
    """An initialize after a UTF-8 byte order mark gets one answer, and the session works."""
    with RawStdio(root, env=SYNCED) as server:
        server.send(b"\xef\xbb\xbf" + request(1, "initialize", _hello("bom")).encode())
        hello = server.answer(1)
        assert hello["result"]["protocolVersion"] == PROTOCOL, hello
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        server.send(_call("last", QUERY, {"query": "nightly backup"}))
        assert server.answer("last")["result"]["structuredContent"]["hits"]
        assert server.close() == 0, server.stderr()
    assert list(answers_to(server.received, 1)) == [hello]
    assert not [m for m in server.received if "error" in m], server.received


# -- a line longer than server.max_body_bytes --------------------------------------------

LIMIT = 4096


def test_a_line_over_the_size_limit_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    root = make_corpus(tmp_path, CORPUS_ONE)
    env = {**SYNCED, "KNOWHUB_SERVER__MAX_BODY_BYTES": str(LIMIT)}
    with RawStdio(root, env=env) as server:
        server.initialize()
        server.send(_call(41, QUERY, {"query": "backup " * LIMIT}))  # its id comes first
        big = server.answer(41)
        assert big["error"]["code"] == INVALID_REQUEST, big
        assert f"{LIMIT} bytes" in big["error"]["message"], big
        assert "server.max_body_bytes" in big["error"]["message"], big
        # 16 MB whose id comes last: read through, never held whole; no id to answer with.
        server.send('{"jsonrpc": "2.0", "params": {"a": "' + "x" * (16 << 20) + '"}, "id": 42}')
        server.send(_call("fits", QUERY, {"query": "nightly backup"}))
        assert server.answer("fits")["result"]["structuredContent"]["hits"]
        assert server.close() == 0, server.stderr()
    errors = [m for m in server.received if "error" in m]
    assert [e["id"] for e in errors] == [41, None], errors
    assert errors[1]["error"]["code"] == INVALID_REQUEST
    assert "Traceback" not in server.stderr()
