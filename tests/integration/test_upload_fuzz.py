"""A seeded fuzz of the console's uploads and the answer WebSocket over the real server app
(uvicorn as ``serve http`` configures it, on a real socket): file names in every script and
every way a client may write them, malformed multipart bodies, bad boundaries, huge headers;
WebSocket frames random, truncated, huge and deeply nested. No request gets a 5xx; every
WebSocket message is answered (its last event ``end`` or ``error``) or the socket is closed
with a close frame saying why (never dropped: 1006)."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import uvicorn
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from knowhub.interfaces.http import create_app
from knowhub.interfaces.http.console.uploads import safe_name
from knowhub.interfaces.http.server import uvicorn_options
from knowhub.interfaces.listen import bind
from knowhub.interfaces.serving import config
from tests.helpers import WAIT_S, fast_settings
from tests.http_helpers import build_corpus
from tests.mcp_helpers import wait_until
from tests.upload_helpers import BOUNDARY, SCRIPT, content_type, disposition, form, multipart

SEED = 36
SCRIPTS: dict[str, list[str]] = {
    "latin": list("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789-_()"),
    "latin-1": list("éèàçñßøåÆÐþ¿¡«»"),
    "cjk": list("报销制度文件季度报告会议纪要東京日本語한국어"),
    "cyrillic": list("ОтчётпланбюджетЖЩЮЯ"),
    "arabic": list("تقريرالميزانيةשלוםעולם"),
    "emoji": ["😀", "👨\u200d👩\u200d👧", "🇺🇦", "🏳\ufe0f\u200d🌈", "👍🏽"],
    "combining": ["e\u0301", "a\u0308", "o\u0302\u0323", "\u0301\u0301\u0301", "\u20dd"],
    "rtl": ["\u200f", "\u202e", "\u2066", "\u2069", "\u061c", "\u200e"],
    "control": [*map(chr, range(32)), "\x7f", "\x85", "\x9b"],
    "path": ["/", "\\", "..", ".", ":", "*", "?", '"', "<", ">", "|", "%", "'", ";", "="],
}
EXTENSIONS = [".md", ".md", ".md", ".MD", ".txt", ".exe", "", ".md.exe", ".markdown"]


@contextmanager
def _serving(data: Path) -> Iterator[str]:
    """The server app under uvicorn, configured as ``knowhub serve http`` runs it."""
    settings = fast_settings(data)
    with closing(bind("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
        options = uvicorn_options(settings)
        asgi = create_app(settings)
        server = uvicorn.Server(config(asgi, "127.0.0.1", port, settings.server, **options))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            wait_until(lambda: server.started or not thread.is_alive(), timeout=120, interval=0.05)
            assert server.started, "the server did not start"
            yield f"127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(60)


# -- names ----------------------------------------------------------------------------------


def _name(rng: random.Random) -> str:
    chosen = rng.sample(sorted(SCRIPTS), rng.randint(1, 3))
    length = rng.choice([1, 3, 8, 20, 40, 300, 1000])
    stem = "".join(rng.choice(SCRIPTS[rng.choice(chosen)]) for _ in range(length))
    return stem + rng.choice(EXTENSIONS)


def _header(rng: random.Random, name: str) -> bytes:
    """``name`` in a part's Content-Disposition, written one of the ways clients write it."""
    start = b'form-data; name="files"; '
    utf8 = quote(name, safe="", errors="surrogatepass")
    browser = name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
    forms = [
        start + f'filename="{browser}"'.encode(),  # what the HTML standard has browsers send
        start + f'filename="{name}"'.encode(),  # raw: quotes and line breaks as they are
        start + f'filename="{name}"'.encode("latin-1", errors="replace"),
        start + f"filename*=UTF-8''{utf8}".encode(),
        start + f"filename=\"fallback.md\"; filename*=utf-8'en'{utf8}".encode(),
        start + f"filename*=UTF-8''{utf8[:-1]}%Z{utf8[-1:]}".encode(),  # broken escapes
        start + f"filename=\"x.md\"; filename*=X-UNKNOWN-9''{utf8}".encode(),
        start + f"filename*=rot13''{utf8}; filename*=UTF-8''%FF%FE.md".encode(),
        start + f"filename*={utf8}".encode(),  # no charset at all
        start + b"filename=" + name.encode(),  # unquoted
    ]
    return rng.choice(forms)


def _check_job(client: httpx.Client, url: str) -> None:
    """Wait for the job; every file ends settled, stored under a safe name, no bug shown."""

    def ended() -> dict[str, Any] | None:
        view: dict[str, Any] = client.get(url).json()
        return view if view["finished"] else None

    view: dict[str, Any] = wait_until(ended, timeout=120, interval=0.05)
    assert not view["error"].startswith("ingest failed"), view["error"]
    for f in view["files"]:
        assert f["state"] in {"done", "unchanged", "failed"}, f
        assert f["state"] != "failed" or f["reason"], f
        if f["source"]:
            assert safe_name(f["source"]) == f["source"], f
            assert len(f["source"].encode()) <= 255, f


# -- malformed bodies -----------------------------------------------------------------------


def _malformed(rng: random.Random) -> list[tuple[bytes, bytes]]:
    """(content type, body) pairs no form would send."""
    good = form([("ok.md", b"# OK\n\nfine\n")])
    cut = rng.randrange(1, len(good))
    garbage = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    mp = content_type()["Content-Type"].encode()
    pad = b"p" * rng.choice([4_300, 10_000, 100_000])
    headers = b"".join(b"\r\nX-H%d: v" % n for n in range(20))
    return [
        (mp, good[:cut]),  # truncated
        (mp, good[:cut] + garbage + good[cut:]),  # garbage inside
        (mp, garbage),
        (mp, b""),
        (mp, good.replace(f"--{BOUNDARY}--".encode(), b"")),  # never closed
        (b"multipart/form-data", good),  # no boundary
        (b'multipart/form-data; boundary=""', good),
        (b"multipart/form-data; boundary=" + b"b" * 71, good),
        (b"multipart/form-data; boundary=\xe6\x8a\xa5", good),
        (b"multipart/form-data; boundary=other", good),
        (b"application/json", b'{"files": []}'),
        (b"", good),
        (mp, multipart([(disposition("files", "a.md") + b"\r\nX-Pad: " + pad, b"x")])),
        (mp, multipart([(disposition("files", "a.md") + headers, b"x")])),
        (mp, multipart([(b"form-data", b"no name")])),
        (mp, multipart([(b'form-data; name="files"; filename=""', b"bytes, no name")])),
        (mp, multipart([(b'form-data; name="collection"', b"../../etc")])),
        (mp, multipart([(b'form-data; name="collection"', b"x\x00y")])),
        (mp, multipart([(b'form-data; name="collection"', b"c" * 20_000)])),
        (mp, multipart([(b'form-data; name="tags"', b"=nokey,\xff\xfe")])),
        (
            mp,
            multipart(
                [
                    (
                        disposition("files", "a.md")
                        + b"\r\nContent-Type: multipart/mixed; boundary=in",
                        b"--in\r\n\r\nx\r\n--in--",
                    )
                ]
            ),
        ),
        (mp, f"--{BOUNDARY}\r\nContent-Disposition\r\n\r\nx\r\n--{BOUNDARY}--\r\n".encode()),
        (mp, f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\x00\r\n\r\nx\r\n".encode()),
    ]


def test_a_fuzz_of_uploads_gets_no_5xx_and_every_name_is_stored_safely(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    with (
        _serving(build_corpus(tmp_path)) as host,
        httpx.Client(base_url=f"http://{host}", headers=SCRIPT, timeout=60) as client,
    ):
        answers: list[tuple[str, int]] = []
        for n in range(12):  # uploads of names: each waits for its job (8 may be pending)
            names = [_name(rng) for _ in range(6)]
            parts = [(disposition("collection"), b"default")] + [
                (_header(rng, name), f"# Note {n}.{i}\n\nword{n}x{i}\n".encode())
                for i, name in enumerate(names)
            ]
            sent = client.post("/ui/upload", content=multipart(parts), headers=content_type())
            answers.append((f"names {names!r}", sent.status_code))
            if sent.status_code == 202:
                _check_job(client, sent.json()["url"])
        for kind, body in _malformed(rng):
            for path in ("/ui/upload", "/ui/faq/import"):
                sent = client.post(path, content=body, headers={"Content-Type": kind})
                answers.append(
                    (f"{path} {kind[:60]!r} {body[:300]!r} {sent.text[-600:]}", sent.status_code)
                )
        big = {"X-Big": "h" * 100_000}
        answers.append(("100 kB request header", client.get("/ui/upload", headers=big).status_code))
    failed = [(what, status) for what, status in answers if status >= 500]
    assert not failed, failed
    assert any(status == 202 for _, status in answers) and any(
        status == 400 for _, status in answers
    )


# -- WebSocket ------------------------------------------------------------------------------


def _nested(rng: random.Random, depth: int) -> str:
    opens = "".join(rng.choice(["[", '{"a":']) for _ in range(depth))
    return opens + "1" + "".join("]" if c == "[" else "}" for c in reversed(opens) if c in "[{")


def _frames(rng: random.Random) -> list[str | bytes]:
    question = json.dumps({"question": "How long are backups kept?", "id": 1})
    return [
        question,
        "[" * 5000,
        _nested(rng, 900),
        _nested(rng, 20_000),
        '{"question": ' + "[" * 3000 + "]" * 3000 + "}",
        '{"question": "x", "filters": ' + '{"a":' * 800 + "1" + "}" * 800 + "}",
        question[: rng.randrange(1, len(question))],  # truncated
        "",
        "null",
        "1" * 5000,  # more digits than Python's int() reads
        '{"question": 1e999}',
        '{"question": "a\\ud800b"}',  # a lone surrogate escape
        json.dumps({"question": "q" * 10_000}),
        json.dumps({"question": "backups", "history": [{"role": "x", "content": 5}] * 50}),
        json.dumps({"question": "backups", "id": {"nested": [1, 2]}}),
        "".join(chr(rng.randrange(32, 0x10FFFF)) for _ in range(200))
        .encode("utf-8", "replace")
        .decode("utf-8", "replace"),
        bytes(rng.randrange(256) for _ in range(300)),  # a binary frame
        question.encode(),
        "x" * (1 << 21),  # over server.max_body_bytes (1 MiB): 1009
    ]


def _answered(socket: ClientConnection, message: str | bytes, text: bool | None = None) -> str:
    """Send one message: its last event's kind, or the close code the server sent.
    ``text=True`` sends bytes as a text frame, unchecked (not UTF-8, say)."""
    try:
        socket.send(message, text=text)
        while True:
            event = json.loads(socket.recv(timeout=60))
            if event["event"] in {"end", "error"}:
                assert event["event"] == "end" or event["status"] < 500, event
                return str(event["event"])
    except ConnectionClosed as closed:
        assert closed.rcvd is not None, "dropped without a close frame"
        return f"closed {closed.rcvd.code}"


def test_a_fuzz_of_websocket_frames_is_answered_or_closed_with_a_code(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    outcomes: list[tuple[str, str]] = []
    with _serving(build_corpus(tmp_path)) as host:
        # The last one is not UTF-8, sent as a text frame all the same.
        pending = [(frame, None) for frame in _frames(rng)] + [(bytes([0xFF, 0xFE, 0x80]), True)]
        while pending:  # a socket the server closed is opened again for the rest
            with connect(f"ws://{host}/api/stream", max_size=None, open_timeout=WAIT_S) as socket:
                while pending:
                    frame, text = pending.pop(0)
                    got = _answered(socket, frame, text)
                    outcomes.append((repr(frame[:40]), got))
                    if got.startswith("closed"):
                        break
    closes = {got for _, got in outcomes if got.startswith("closed")}
    assert closes <= {"closed 1007", "closed 1009"}, outcomes
    assert ("closed 1009" in closes) and ("closed 1007" in closes), outcomes
    assert outcomes[0][1] == "end" and outcomes[1][1] == "error", outcomes
