"""What the scripted chat server sends: the bodies, errors and stream frames of the
OpenAI-compatible, Azure OpenAI and Ollama chat APIs, as their real servers send them.
(Tool calls, and the checks of a tool conversation: :mod:`knowhub.testing.llm_tools_wire`.)"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from knowhub.testing.llm_tools_wire import ToolReply, call_frames, invalid_conversation, whole_calls

__all__ = [
    "Answer",
    "Calls",
    "answer_text",
    "error",
    "error_body",
    "error_frame",
    "frames",
    "invalid",
    "route",
    "tokens",
    "unauthorized",
    "whole",
]

Answer = str | Callable[[str], str]

Calls = list[tuple[str, ToolReply]]
"""The tool calls of a reply, each with its id."""

_AZURE = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")
_TOKEN = re.compile(r"\S+\s*|\s+")


def tokens(text: str) -> list[str]:
    """The pieces a stream sends: words with their trailing space; joined they are ``text``."""
    return _TOKEN.findall(text)


def route(path: str) -> tuple[str, str | None]:
    """The protocol a path speaks ("?" for none), and the Azure deployment it names."""
    azure = _AZURE.match(path)
    if azure:
        return "azure", azure.group(1)
    if path.endswith("/chat/completions"):
        return "openai", None
    if path == "/api/chat":
        return "ollama", None
    return "?", None


def invalid(
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
        return 400, error(protocol, "could not parse the JSON body of your request")
    if protocol != "azure" and not body.get("model"):
        return 400, error(
            protocol,
            "model is required" if protocol == "ollama" else "you must provide a model parameter",
        )
    problem = invalid_conversation(protocol, body)
    if problem is not None:
        return 400, error(protocol, problem)
    wants_json = body.get("response_format") == {"type": "json_object"}
    if wants_json and not any("json" in _text(m.get("content")).lower() for m in body["messages"]):
        return 400, error(
            protocol,
            "'messages' must contain the word 'json' in some form, "
            "to use 'response_format' of type 'json_object'.",
        )
    return None


def _text(content: object) -> str:
    """A message's text: its content, or its text parts (a turn with pictures)."""
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, dict) and "text" in p)
    return content if isinstance(content, str) else ""


def error(protocol: str, message: str, kind: str = "invalid_request_error") -> Any:
    """The error body each server sends with ``message``."""
    if protocol == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def error_body(protocol: str, status: int) -> Any:
    """The body of a 429, 500 or 502 answer."""
    messages = {
        429: "Rate limit reached for requests. Please try again in 0s.",
        500: "The server had an error while processing your request. Sorry about that!",
        502: "upstream model server unavailable",
    }
    return error(protocol, messages[status], "server_error")


_AZURE_401 = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a "
    "valid key for an active subscription and use a correct regional API endpoint for your "
    "resource."
)


def unauthorized(protocol: str, auth: str, sent: str | None, echo: bool) -> Any:
    """The body of a 401: the key ``sent`` was missing or wrong (repeated whole if ``echo``)."""
    if protocol == "azure":
        message = _AZURE_401 + (f" Key: {sent}" if echo and sent else "")
        return {"error": {"code": "401", "message": message}}
    if auth == "missing":
        return error(protocol, "You didn't provide an API key.")
    shown = sent if echo else f"{(sent or '')[:3]}***{(sent or '')[-2:]}"
    return error(protocol, f"Incorrect API key provided: {shown}.")


def answer_text(answer: Answer, body: Any, protocol: str) -> str:
    """The answer to the request ``body``: a JSON object when JSON output was asked for."""
    if not isinstance(body, dict):
        return ""
    users = [_text(m["content"]) for m in body.get("messages", []) if m.get("role") == "user"]
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


def whole(protocol: str, body: dict[str, Any], text: str, calls: Calls) -> Any:
    """The body of an answer that is not streamed."""
    if protocol == "ollama":
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = whole_calls(protocol, calls)
        return {
            "model": body["model"],
            "created_at": "2025-01-01T00:00:00.000000Z",
            "message": message,
            "done_reason": "stop",
            "done": True,
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": 20,
            "prompt_eval_duration": 100,
            "eval_count": len(tokens(text)),
            "eval_duration": 800,
        }
    message = {"role": "assistant", "content": (text or None) if calls else text, "refusal": None}
    if calls:
        message["tool_calls"] = whole_calls(protocol, calls)
    choice = {"index": 0, "message": message, "logprobs": None}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "gpt-4o-mini-2024-07-18"),
        "choices": [{**choice, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": len(tokens(text)),
            "total_tokens": 20 + len(tokens(text)),
        },
    }


def frames(
    protocol: str, body: dict[str, Any], pieces: list[str], calls: Calls
) -> list[tuple[bytes, bool]]:
    """Every frame of a stream, in order (opening frames, the text's pieces, the calls,
    closing frames), each with whether it carries a token: a piece of text or of a call."""
    if protocol == "ollama":
        return _ollama_frames(body, pieces, calls)
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model", "gpt-4o-mini-2024-07-18"),
        "system_fingerprint": "fp_1",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    def event(payload: Any) -> bytes:
        return b"data: " + json.dumps(payload).encode() + b"\n\n"

    sent = [(event(_AZURE_FILTER_RESULTS), False)] if protocol == "azure" else []
    opening = {"role": "assistant", "content": "" if pieces or not calls else None}
    sent.append((event(chunk({**opening, "refusal": None})), False))
    sent.extend((event(chunk({"content": p})), True) for p in pieces)
    sent.extend(call_frames(protocol, lambda delta: event(chunk(delta)), calls))
    sent.append((event(chunk({}, "tool_calls" if calls else "stop")), False))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": 20,
            "completion_tokens": len(pieces),
            "total_tokens": 20 + len(pieces),
        }
        sent.append((event({**base, "choices": [], "usage": usage}), False))
    return [*sent, (b"data: [DONE]\n\n", False)]


# The chunk an Azure stream opens with: its content filter's verdict on the prompt.
_AZURE_FILTER_RESULTS = {
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


def _ollama_frames(
    body: dict[str, Any], pieces: list[str], calls: Calls
) -> list[tuple[bytes, bool]]:
    stamp = {"model": body["model"], "created_at": "2025-01-01T00:00:00.000000Z"}

    def line(payload: dict[str, Any]) -> bytes:
        return json.dumps({**stamp, **payload}).encode() + b"\n"

    sent = [
        (line({"message": {"role": "assistant", "content": p}, "done": False}), True)
        for p in pieces
    ]
    sent.extend(call_frames("ollama", lambda m: line({"message": m, "done": False}), calls))
    last = {
        "message": {"role": "assistant", "content": ""},
        "done_reason": "stop",  # also after tool calls: Ollama has no reason of its own for them
        "done": True,
        "total_duration": 1000,
        "eval_count": len(pieces),
    }
    return [*sent, (line(last), False)]


def error_frame(protocol: str) -> bytes:
    """The frame a stream that breaks off sends: the server's error object."""
    if protocol == "ollama":
        return json.dumps({"error": "model runner has unexpectedly stopped"}).encode() + b"\n"
    message = error(protocol, "The model is overloaded. Please try again later.", "server_error")
    return b"data: " + json.dumps(message).encode() + b"\n\n"
