"""The answer to a stdio line the MCP SDK would drop without a word.

The SDK's stdio reader parses each line with ``jsonrpc_message_adapter.validate_json``; a
line that fails goes to the session as an exception, which logs it at debug level and
answers nothing, and the client's call waits forever. Such lines are common enough: a lone
surrogate escape (``JSON.stringify`` of half an emoji), a frame cut short, a batch, an id
that is neither an integer nor a string (the SDK reads ``"id": 1.5`` as a notification).

Each is answered here as JSON-RPC 2.0 and the SDK's streamable HTTP transport do:

* -32700 Parse error: not JSON (the ``id`` is read from the part before the break when it
  can be: a frame cut after its id still ends its call);
* -32600 Invalid Request: JSON, but not a JSON-RPC message (the message says what is
  wrong); a batch gets an array of them, one per request in it (MCP has no batches since
  protocol 2025-06-18);
* -32602 Invalid params: a lone surrogate in ``params`` (the path to it is named).

The ``id`` is the frame's own when it has one a client could wait on, null otherwise. A
blank line is no message and gets no answer; nor does a notification or a response (to a
request of the server's) the SDK cannot read (JSON-RPC answers neither): it is dropped,
and logged.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import JSONRPCNotification, jsonrpc_message_adapter
from pydantic import ValidationError

from knowhub.checks import unpaired_surrogate
from knowhub.interfaces.mcp.rpcid import echoable, recovered_id, sdk_id

__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "PARSE_ERROR", "refusal"]

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
ONE_A_LINE = "send one JSON-RPC message a line"
BATCH = (
    "batches are not supported (MCP has none since protocol 2025-06-18): "
    "send each message on its own line"
)

Answer = dict[str, Any] | list[dict[str, Any]]


DROP = ""
"""What :func:`refusal` gives for a line the SDK cannot read that must not be answered."""


def refusal(line: str) -> str | None:
    """The line to answer ``line`` with when the SDK cannot take it as the message it is;
    :data:`DROP` when it cannot and no answer is due; None when it can (or when it is
    blank)."""
    line = line.rstrip("\r\n")  # inside a string cut short, the newline would be the error
    if not line.strip():
        return None
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:  # not JSON, or not JSON-RPC
        answer = _refused(line, _reason(exc))
        if answer is None:
            return DROP
    else:
        # An "id" the SDK cannot take makes a request a notification to it: never answered.
        # The key may be written with escapes ("\u0069d"): the parse tells.
        if not isinstance(message, JSONRPCNotification) or not ('"id"' in line or "\\u" in line):
            return None
        answer = _odd_id(line)
        if answer is None:
            return None
    return json.dumps(answer, separators=(",", ":")) + "\n"


def _refused(line: str, reason: str) -> Answer | None:
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError) as exc:
        why = "nesting too deep" if isinstance(exc, RecursionError) else str(exc)
        return _error(recovered_id(line), PARSE_ERROR, f"Parse error: {why}; {ONE_A_LINE}")
    if isinstance(parsed, list):
        return _batch(parsed)
    if not isinstance(parsed, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: not a JSON object; {ONE_A_LINE}")
    ident = _id_of(parsed)
    wrong = _what_is_wrong(parsed)
    if wrong is not None:
        return _error(ident, INVALID_REQUEST, f"Invalid Request: {wrong}")
    if "id" not in parsed or "method" not in parsed:  # a notification, or a response
        return None
    # Python's parser read it whole, the SDK's did not: a lone surrogate, or deep nesting.
    if problem := unpaired_surrogate(parsed.get("params"), "params"):
        return _error(ident, INVALID_PARAMS, f"Invalid params: {problem}")
    if problem := unpaired_surrogate(parsed, "message"):
        return _error(ident, INVALID_REQUEST, f"Invalid Request: {problem}")
    return _error(ident, PARSE_ERROR, f"Parse error: {reason}")


def _odd_id(line: str) -> Answer | None:
    """The answer to a request whose id the SDK took it for a notification for."""
    try:
        parsed = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or "id" not in parsed:
        return None  # "id" was in a parameter, not the message: a notification indeed
    return _error(_id_of(parsed), INVALID_REQUEST, f"Invalid Request: {_ID}")


_ID = '"id" must be an integer or a string (not null, a fraction or a boolean)'


def _what_is_wrong(message: dict[str, Any]) -> str | None:
    """What makes ``message`` no JSON-RPC message; None when it is one, as the SDK reads."""
    if message.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return '"method" must be a string'
        if "id" in message and not sdk_id(message["id"]):
            return _ID
        if message.get("params") is not None and not isinstance(message["params"], dict):
            return '"params" must be an object (MCP passes parameters by name)'
    elif "result" not in message and "error" not in message:
        return 'a message needs a "method" (a request or notification), or a "result" or "error"'
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        return f"not a JSON-RPC 2.0 message ({_reason(exc)})"
    return None


def _batch(items: list[Any]) -> Answer | None:
    """An error per request of a batch, in one array (notifications get none); one error
    for an empty batch, as JSON-RPC 2.0 says."""
    if not items:
        return _error(None, INVALID_REQUEST, f"Invalid Request: an empty batch; {BATCH}")
    errors = [
        _error(_id_of(item) if isinstance(item, dict) else None, INVALID_REQUEST, BATCH)
        for item in items
        if not (isinstance(item, dict) and "method" in item and "id" not in item)
    ]
    return errors or None


def _id_of(message: dict[str, Any]) -> Any:
    """The id to answer a request (a message with a method) with: its own, when it is a
    string or a finite number; null otherwise (a response's id is ours, not the client's)."""
    ident = message.get("id") if "method" in message else None
    return ident if echoable(ident) else None


def _reason(exc: ValidationError) -> str:
    """pydantic's first complaint, without its links and its echo of the input."""
    first = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"][1:])  # [0]: the union member
    what = str(first["msg"]).removeprefix("Invalid JSON: ")
    return f"{where}: {what}" if where else what


def _error(ident: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
