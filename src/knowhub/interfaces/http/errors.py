"""How failures look on the wire: one JSON shape, ``{"error": message, "status": code}``.

The same shape the security guard answers with, so a client handles every error one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from knowhub.errors import (
    AuthError,
    CollectionNotFound,
    ConfigError,
    KnowhubError,
    ProviderError,
    QueryError,
    StoreError,
)
from knowhub.interfaces.drain import ShuttingDownError
from knowhub.interfaces.http.limits import ServerBusyError
from knowhub.interfaces.security import ThrottledError

__all__ = [
    "DataDirNotWritableError",
    "InsufficientStorageError",
    "NotConfiguredError",
    "PayloadTooLargeError",
    "describe_invalid",
    "error_body",
    "error_status",
]


class PayloadTooLargeError(QueryError):
    """A body (or one file of it) over a limit the message names: 413."""


class InsufficientStorageError(KnowhubError):
    """The disk of the data dir is full (or over a quota): 507, nothing half-written kept."""


class DataDirNotWritableError(KnowhubError):
    """The data dir cannot be written (read-only, or not the server's to write): 503, naming
    it. Not a 500: the server is sound and an operator's fix makes the request succeed."""


class NotConfiguredError(ConfigError):
    """The route needs a setting this server lacks (a chat with no LLM): 409, naming it.
    The request is sound, the server is not set up for it: retrying will not help until an
    operator configures it, which a 5xx would not say."""


def error_status(exc: BaseException) -> int:
    """The HTTP status for an error: the caller's fault (4xx) or an upstream one (502)."""
    if isinstance(exc, ServerBusyError | ShuttingDownError):
        return 503  # with Retry-After: every slot taken and the queue full, or stopping
    if isinstance(exc, InsufficientStorageError):
        return 507
    if isinstance(exc, DataDirNotWritableError):
        return 503
    if isinstance(exc, NotConfiguredError):
        return 409
    if isinstance(exc, PayloadTooLargeError):
        return 413
    if isinstance(exc, ThrottledError):
        return 429  # too many wrong tokens from this address: with Retry-After
    if isinstance(exc, AuthError):
        return 403
    if isinstance(exc, ProviderError):
        return 502  # the model, embedder or reranker behind us failed, not this server
    if isinstance(exc, CollectionNotFound):
        return 404
    if isinstance(exc, QueryError | StoreError):
        return 400
    return 500


def error_body(exc: BaseException | str, status: int | None = None) -> dict[str, Any]:
    if isinstance(exc, str):
        return {"error": exc, "status": status or 500}
    if isinstance(exc, KnowhubError):
        body: dict[str, Any] = {"error": str(exc), "status": status or error_status(exc)}
        param = getattr(exc, "param", None)  # the request field at fault, where one is
        return {**body, "param": param} if isinstance(param, str) else body
    # Anything else is a bug: its text may hold internals, so it stays in the server log.
    return {"error": "internal error: see the server log", "status": status or 500}


def describe_invalid(errors: Sequence[Any], whole: str = "body") -> str:
    """Pydantic's validation errors as one line: ``top_k: Input should be ≤ 100; …``.

    ``whole`` names what an error about the entire input is about (``body``, ``message``).
    """
    parts = []
    for error in errors:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or whole
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)
