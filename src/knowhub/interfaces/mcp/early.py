"""The MCP stdio wire from the process's first moment: the handshake answered while the SDK loads.

An MCP client starts ``knowhub serve mcp`` and waits for ``initialize`` and ``tools/list``
before it calls anything. Importing the MCP SDK alone takes ~1.2 s on 2 cores (pydantic
building the protocol's models), so a server that first imports it answers both after
~2 s. This module owns stdin and stdout from the start instead, imports nothing heavy,
and answers the two requests from what the SDK answered them with the last time (kept
in ``DATA_DIR/cache/``, keyed by the knowhub and SDK versions and the server's options,
and per protocol version the client asks for). Everything else waits for the SDK.

When the SDK is ready it reads this wire as its stdio transport (``stdio_server`` with
explicit streams) and sees the whole conversation: the ``initialize`` it missed is
replayed to it (its answer, already sent, is dropped), and when ``tools/list`` was
answered early, the SDK is asked it once more under a private id; if its answer
differs (the tools changed since), the cache is rewritten and the client told by
``notifications/tools/list_changed`` (announced in the capabilities). Nothing early is
answered without a cached answer: a first start is as slow as before and fills it.

While serving, fd 0 reads the null device and fd 1 writes to stderr, as under the SDK's
own transport, so a stray print cannot tear a frame.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import threading
from collections import deque
from pathlib import Path
from typing import Any

from knowhub.interfaces.mcp.rpcid import ID_SEARCH_CHARS, recovered_id

__all__ = ["Wire", "handshake_file"]

log = logging.getLogger("knowhub.mcp")

_BOM = b"\xef\xbb\xbf"
# A surrogate escape, \uD800 to \uDFFF: paired (an emoji) or not, such a line goes to the SDK.
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
# The private id of the SDK's second tools/list: no client can have picked it.
CHECK_ID = f"knowhub-tools-check-{secrets.token_hex(8)}"
_FORMAT = 1


def handshake_file(data_dir: Path, *key: object) -> Path:
    """Where the handshake answers of a server started with ``key`` are cached."""
    from importlib.metadata import version

    identity = json.dumps([_FORMAT, version("knowhub"), version("mcp"), *map(str, key)])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return data_dir / "cache" / f"mcp-handshake-{digest}.json"


class Wire:
    """stdin/stdout as the MCP stdio transport: early answers, then the SDK's streams."""

    def __init__(self, cache: Path | None, max_line_bytes: int) -> None:
        self._cache = cache
        self._max_line = max_line_bytes  # server.max_body_bytes, as over HTTP
        self._known = _read(cache)  # {"initialize": {version: result}, "tools": {...}}
        self._lock = threading.Condition()
        self._lines: deque[bytes | None] = deque()  # for the SDK; None: the client left
        self._handed = False  # the SDK reads now: nothing more is answered early
        self._drop: set[str] = set()  # ids (as JSON) whose SDK answer was sent early
        self._version: str | None = None  # the protocol version answered early
        self._early_tools: Any = None  # the tools/list result sent early
        self._checking = False  # the SDK was asked tools/list under CHECK_ID
        # initialize and tools/list requests passed on to the SDK, id (as JSON) -> method,
        # whose answers fill the cache; the protocol version the last initialize asked for.
        self._asked: dict[str, str] = {}
        self._requested: str | None = None
        self._in, self._out = _claim()
        self.sdk_stdin = _SdkStdin(self)
        self.sdk_stdout = _SdkStdout(self)
        threading.Thread(target=self._read_all, name="mcp-stdin", daemon=True).start()

    # -- the client's side ---------------------------------------------------------

    def _read_all(self) -> None:
        try:
            while line := self._in.readline(self._max_line + 1):
                if len(line) > self._max_line and not line.endswith(b"\n"):
                    self._refuse_long(line)
                else:
                    self._route(line)
        except OSError as exc:  # stdin or stdout gone: the SDK must still see the end
            log.warning("MCP stdio: %s", exc)
        finally:
            with self._lock:
                self._lines.append(None)
                self._lock.notify_all()

    def _route(self, line: bytes) -> None:
        # A byte order mark (some Windows clients write one first) is no part of the message:
        # the SDK's parser would refuse the line, and its id would be lost.
        line = line.removeprefix(_BOM)
        # Only the two handshake requests are read here; the SDK parses every message. One
        # the SDK cannot take (a surrogate escape that may be unpaired: refused by
        # frames.py after the replay) is not answered early: it would be answered twice.
        handshake = b'"initialize"' in line or b'"tools/list"' in line
        message = _parsed(line) if handshake and not _SURROGATE.search(line) else None
        with self._lock:
            answer = self._early(message) if message is not None and not self._handed else None
            if message is not None and answer is None:
                self._track(message)
            if answer is None or answer[0] == "initialize":
                self._lines.append(line)  # an initialize is replayed: the SDK's session
                self._lock.notify_all()  # must see it (its answer is dropped)
            if message is not None and answer is not None:
                if answer[0] == "initialize":
                    self._drop.add(json.dumps(message["id"]))
                else:  # not passed on: the SDK is asked again at the hand-over
                    self._early_tools = answer[1]
                log.debug("answered %s from the cached handshake", answer[0])
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": answer[1]})

    def _refuse_long(self, start: bytes) -> None:
        """Answer a line longer than the limit from its ``start`` (its id is read there),
        then read the rest of it in pieces, holding none: a client's huge frame costs the
        server no more memory than the limit."""
        text = start[:ID_SEARCH_CHARS].removeprefix(_BOM).decode("utf-8", errors="replace")
        with self._lock:
            self._write(
                {
                    "jsonrpc": "2.0",
                    "id": recovered_id(text),
                    "error": {
                        "code": -32600,  # Invalid Request, as HTTP's 413 for a body this big
                        "message": f"Invalid Request: a message over {self._max_line} bytes "
                        "(server.max_body_bytes): send a smaller one",
                    },
                }
            )
        rest = start
        while rest and not rest.endswith(b"\n"):
            rest = self._in.readline(ID_SEARCH_CHARS)
        log.warning("refused an MCP message over %d bytes", self._max_line)

    def _early(self, message: dict[str, Any]) -> tuple[str, Any] | None:
        """The cached answer to ``message``, if it is one answered early."""
        method, params = message.get("method"), message.get("params") or {}
        # Only ids the SDK answers too (it takes a float id for a notification's).
        ident = message.get("id")
        if (
            not isinstance(ident, int | str)
            or isinstance(ident, bool)
            or not isinstance(params, dict)
        ):
            return None
        if method == "initialize" and self._version is None:
            requested = str(params.get("protocolVersion"))
            result = self._known.get("initialize", {}).get(requested)
            if result is not None:
                self._version = requested
                return "initialize", result
        if method == "tools/list" and self._version is not None and not params.get("cursor"):
            result = self._known.get("tools", {}).get(self._version)
            if result is not None and self._early_tools is None:
                return "tools/list", result
        return None

    def _track(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if "id" in message and method in ("initialize", "tools/list"):
            self._asked[json.dumps(message["id"])] = str(method)
            if method == "initialize":
                params = message.get("params")
                self._requested = (
                    str(params.get("protocolVersion")) if isinstance(params, dict) else None
                )

    # -- the SDK's side ------------------------------------------------------------

    def next_line(self) -> str:
        """The next line for the SDK ("" when the client closed stdin)."""
        with self._lock:
            if not self._handed:
                self._handed = True
                if (
                    self._early_tools is not None and None not in self._lines
                ):  # after the replayed notifications
                    self._checking = True
                    check = {"jsonrpc": "2.0", "id": CHECK_ID, "method": "tools/list"}
                    # Before the client's first call: its answer could otherwise come
                    # before the news that the tools changed (a call that reads a warm
                    # store outruns tools/list).
                    at = _handshake_end(self._lines)
                    self._lines.insert(at, json.dumps(check).encode())
            while not self._lines:
                self._lock.wait()
            line = self._lines.popleft()
            if line is None:
                self._lines.appendleft(None)  # every later read sees the end too
                return ""
            return line.decode("utf-8", errors="replace")

    def sdk_wrote(self, text: str) -> None:
        """A frame the SDK wrote: sent on, unless it was sent early."""
        with self._lock:
            learning = self._drop or self._asked or self._checking  # else: nothing to learn
            message = _parsed(text.encode()) if learning else None
            if (
                message is not None
                and "id" in message
                and "method" not in message
                and self._answered(json.dumps(message["id"]), message)
            ):
                return
            self._out.write(text.encode("utf-8"))
            self._out.flush()

    def _answered(self, key: str, message: dict[str, Any]) -> bool:
        """Learn from an SDK answer; True when it must not reach the client."""
        result = message.get("result")
        if key in self._drop:  # the replayed initialize
            self._drop.discard(key)
            if "error" in message:  # the client was told it succeeded: say so at least
                log.warning(
                    "the SDK refused the initialize answered from the cache: %s", message["error"]
                )
            self._learn("initialize", self._version, result)
            return True
        if key == json.dumps(CHECK_ID) and self._checking:
            self._checking = False
            if result is not None and result != self._early_tools:
                log.info("the tools changed since the cached handshake: telling the client")
                self._write({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            self._learn("tools", self._version, result)
            return True
        method = self._asked.pop(key, None)
        if method == "initialize":
            self._version = self._requested
            self._learn("initialize", self._version, result)
        elif method == "tools/list" and self._version is not None:
            self._learn("tools", self._version, result)
        return False

    def _learn(self, kind: str, version: str | None, result: Any) -> None:
        if self._cache is None or version is None or not isinstance(result, dict):
            return
        if self._known.get(kind, {}).get(version) == result:
            return
        self._known.setdefault(kind, {})[version] = result
        _write_json(self._cache, self._known)

    def send_line(self, line: str) -> None:
        """One frame of ours (a whole line), between the SDK's."""
        with self._lock:
            self._out.write(line.encode("utf-8"))
            self._out.flush()

    def _write(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self._out.flush()


class _SdkStdin:
    """What the SDK's ``stdio_server`` reads (through ``anyio.wrap_file``): every line but
    those it would drop unanswered, which are answered here (:mod:`.frames`)."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire

    def readline(self) -> str:
        # Imported on the first read, by the SDK's reader: the SDK is loaded by then.
        from knowhub.interfaces.mcp.frames import DROP, refusal

        while True:
            line = self._wire.next_line()
            try:
                answer = refusal(line)
            except Exception:  # a bug here must not end the session: the SDK gets the line
                log.exception("cannot check an MCP frame; passing it on as it is")
                answer = None
            if answer is None:
                return line
            if answer == DROP:  # a notification or a response: JSON-RPC answers neither
                log.info("dropped a message the SDK cannot read: %s", line.rstrip()[:300])
                continue
            log.info("answered a frame the SDK cannot read: %s", answer.rstrip()[:300])
            self._wire.send_line(answer)


class _SdkStdout:
    """What the SDK's ``stdio_server`` writes to."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire

    def write(self, text: str) -> int:
        self._wire.sdk_wrote(text)
        return len(text)

    def flush(self) -> None:
        """Every write is flushed already."""


def _claim() -> tuple[Any, Any]:
    """The wire's own copies of fd 0 and 1, which then point at /dev/null and stderr."""
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb")


def _handshake_end(lines: deque[bytes | None]) -> int:
    """Where the queued handshake (the replayed initialize, notifications) ends."""
    for at, line in enumerate(lines):
        message = _parsed(line) if line is not None else None
        if message is None or ("id" in message and message.get("method") != "initialize"):
            return at
    return len(lines)


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _read(cache: Path | None) -> dict[str, Any]:
    if cache is None:
        return {}
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Whole or not at all; a cache that cannot be written only costs the next start."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        log.warning("cannot cache the MCP handshake in %s (%s)", path, exc)
        with contextlib.suppress(OSError):
            partial.unlink()
