"""JSON over HTTP for the remote providers (rerankers, chat models); stdlib only.

POST JSON, read JSON or a stream of lines, with retries and clear errors. What is retried,
with exponential backoff (``backoff_s``, doubling) or the server's numeric ``Retry-After``
(either capped at ``max_delay_s``): HTTP 429 and 5xx, a refused connection, and a
connection dropped before the answer came (for a stream: before its first delta, since
what was shown cannot be taken back). A timeout is not retried: a stuck server would make
the user wait ``(max_retries + 1) × timeout_s``.

Every failure is a :class:`~knowhub.errors.ProviderError` naming the URL and the cause.
Request headers never appear in messages, and the values of credential headers are
scrubbed from whatever the server sent back (some servers echo a rejected key).
"""

from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from knowhub.config import Settings, secret_unset
from knowhub.errors import ConfigError, ProviderError

__all__ = [
    "Decoder",
    "HTTPStatusError",
    "Transport",
    "api_key",
    "error_message",
    "json_headers",
    "parse_chunk",
    "sse_data",
]

T = TypeVar("T")

Decoder = Callable[[Iterator[bytes]], Iterator[T]]
"""Turns a response's raw lines into what it carries: text deltas, or the pieces of a
model's turn (raising ProviderError on bad lines)."""

_EXCERPT = 300  # characters of a server's error body shown in a message
_MAX_LINE = 4 * 1024 * 1024  # one stream line (a JSON chunk); a longer one reads as malformed
_SECRET_HEADERS = ("authorization", "api-key", "x-api-key")


@dataclass(frozen=True)
class Transport:
    """How one provider talks HTTP: timeouts, retries, and its name in messages.

    Attributes:
        what: the provider's name for messages, e.g. ``llm openai``.
        timeout_s: socket timeout for connecting and for each read (so a stream may
            run longer in all, as long as the next piece comes within it).
        max_retries: retries after the first attempt.
        backoff_s: delay before the first retry; doubles for each next one.
        max_delay_s: the longest wait before a retry, whether a ``Retry-After`` or the
            backoff (which would otherwise reach minutes after a few doublings).
        hints: a fix to add to the message of an HTTP status, e.g. ``{401: "check …"}``.
    """

    what: str
    timeout_s: float = 60.0
    max_retries: int = 2
    backoff_s: float = 0.5
    max_delay_s: float = 30.0
    hints: Mapping[int, str] = field(default_factory=dict)

    def post_json(self, url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> Any:
        """POST ``body`` and return the decoded JSON answer (retrying as described above)."""
        with _Scrub(headers):
            data = _encode(body)
            for attempt in range(self.max_retries + 1):
                try:
                    with self._open(url, data, headers) as response:
                        raw = b"".join(self._lines(url, response))
                    break
                except _RetryableError as retry:
                    self._wait_or_give_up(retry, attempt)
            try:
                return json.loads(raw)
            except ValueError as exc:
                excerpt = raw[:_EXCERPT].decode("utf-8", errors="replace")
                raise ProviderError(f"{self.what}: {url} did not answer JSON: {excerpt!r}") from exc

    def post_stream(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str], decode: Decoder[T]
    ) -> Iterator[T]:
        """POST ``body`` and yield the items ``decode`` finds in the response's lines.

        Retries happen only until the first item is yielded.
        """
        with _Scrub(headers):
            data = _encode(body)
            attempt = 0
            while True:
                started = False
                try:
                    with self._open(url, data, headers) as response:
                        for delta in decode(self._lines(url, response)):
                            started = True
                            yield delta
                    return
                except _RetryableError as retry:
                    if started:
                        raise retry.error from retry.__cause__
                    self._wait_or_give_up(retry, attempt)
                    attempt += 1

    def _open(self, url: str, data: bytes, headers: Mapping[str, str]) -> http.client.HTTPResponse:
        request = urllib.request.Request(url, data=data, headers=dict(headers), method="POST")
        try:
            response: http.client.HTTPResponse = urllib.request.urlopen(
                request, timeout=self.timeout_s
            )
            return response
        except urllib.error.HTTPError as exc:
            raise self._http_error(url, exc) from exc
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise self._io_error(url, reason, waiting="an answer") from exc
        except ValueError as exc:  # urllib's "unknown url type" and friends
            raise ProviderError(f"{self.what}: {url!r} is not a usable URL ({exc})") from exc

    def _lines(self, url: str, response: http.client.HTTPResponse) -> Iterator[bytes]:
        while True:
            try:
                line = response.readline(_MAX_LINE)
            except (OSError, http.client.HTTPException) as exc:
                raise self._io_error(url, exc, waiting="the rest of the answer") from exc
            if not line:
                return
            yield line

    def _http_error(self, url: str, exc: urllib.error.HTTPError) -> Exception:
        try:
            raw = exc.read(64 * 1024)
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        detail = error_message(raw)
        message = f"{self.what}: {url} answered HTTP {exc.code}: {detail}"
        if exc.code in self.hints:
            message += f"; {self.hints[exc.code]}"
        error = HTTPStatusError(message, exc.code, detail)
        if exc.code == 429 or exc.code >= 500:
            return _RetryableError(error, self._retry_after(exc.headers.get("Retry-After")))
        return error

    def _io_error(self, url: str, reason: object, *, waiting: str) -> Exception:
        if isinstance(reason, TimeoutError):
            return ProviderError(
                f"{self.what}: {url} timed out after {self.timeout_s:g} s waiting for {waiting}"
            )
        if isinstance(reason, ConnectionRefusedError):
            return _RetryableError(
                ProviderError(
                    f"{self.what}: cannot reach {url} (connection refused); "
                    "check the URL and that the server runs"
                )
            )
        if isinstance(reason, ConnectionError | http.client.HTTPException):
            # Reset, aborted, closed without an answer, a chunked body cut short.
            return _RetryableError(
                ProviderError(f"{self.what}: {url} dropped the connection ({reason!r})")
            )
        return ProviderError(
            f"{self.what}: cannot reach {url} ({reason}); check the URL and that the server runs"
        )

    def _retry_after(self, value: str | None) -> float | None:
        try:
            seconds = float(value) if value is not None else None
        except ValueError:
            return None  # an HTTP date: the backoff is used instead
        if seconds is None or not seconds >= 0:  # also rejects NaN
            return None
        return seconds

    def _wait_or_give_up(self, retry: _RetryableError, attempt: int) -> None:
        if attempt >= self.max_retries:
            if attempt == 0:
                raise retry.error from retry.__cause__
            raise ProviderError(
                f"{retry.error} (gave up after {attempt + 1} attempts)"
            ) from retry.__cause__
        delay = self.backoff_s * 2**attempt if retry.delay_s is None else retry.delay_s
        time.sleep(min(delay, self.max_delay_s))


class HTTPStatusError(ProviderError):
    """A server's HTTP error answer. ``status`` and ``detail`` (the server's own message)
    let a provider recognise a rejection it can explain better, e.g. a model without tool
    support."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class _RetryableError(Exception):
    """A failure worth another attempt; ``error`` is raised when attempts run out."""

    def __init__(self, error: ProviderError, delay_s: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.delay_s = delay_s


class _Scrub:
    """Re-raise a ProviderError leaving the block with credential values replaced by ***."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        values: set[str] = set()
        for name, value in headers.items():
            if name.lower() in _SECRET_HEADERS and value:
                values |= {value, value.removeprefix("Bearer ").strip()}
        self._secrets = sorted((v for v in values if len(v) >= 4), key=len, reverse=True)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if not isinstance(exc, ProviderError) or not self._secrets:
            return
        message = self._scrubbed(str(exc))
        if message == str(exc):
            return
        if isinstance(exc, HTTPStatusError):  # keep what a provider may recognise
            scrubbed = HTTPStatusError(message, exc.status, self._scrubbed(exc.detail))
            _reraise(scrubbed, exc.__cause__)
        _reraise(ProviderError(message), exc.__cause__)

    def _scrubbed(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _reraise(error: ProviderError, cause: BaseException | None) -> NoReturn:
    raise error from cause


def _encode(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def error_message(raw: bytes) -> str:
    """The message in an error body: ``error.message``, ``error``, ``message`` or ``detail``
    of a JSON object (OpenAI, Azure, Ollama, FastAPI), else the body's start as text."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        for candidate in (
            error.get("message") if isinstance(error, dict) else error,
            data.get("message"),
            data.get("detail"),
        ):
            if isinstance(candidate, str) and candidate.strip():
                text = candidate
                break
    if text.startswith("<"):  # a proxy's HTML error page: its words, not its markup
        text = re.sub(r"<[^>]*>", " ", text)
    text = re.sub(r"\s+", " ", text).strip() or "(empty body)"
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…"


def sse_data(lines: Iterable[bytes]) -> Iterator[str]:
    """The ``data`` of each server-sent event (the WHATWG event-stream format).

    Multi-line data is joined with newlines; comments (``: keep-alive``) and the fields
    ``event``, ``id`` and ``retry`` are skipped; an event is dispatched at a blank line
    (or at the end of the stream, leniently).
    """
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def parse_chunk(what: str, text: str) -> dict[str, Any]:
    """One JSON object of a stream; a server's in-stream error object becomes its message."""
    try:
        chunk = json.loads(text)
    except ValueError as exc:
        raise ProviderError(f"{what}: malformed stream chunk: {text[:_EXCERPT]!r}") from exc
    if not isinstance(chunk, dict):
        raise ProviderError(f"{what}: stream chunk is not a JSON object: {text[:_EXCERPT]!r}")
    if chunk.get("error"):
        message = error_message(json.dumps(chunk).encode("utf-8"))
        raise ProviderError(f"{what}: the server reported an error mid-answer: {message}")
    return chunk


def json_headers(key: str | None) -> dict[str, str]:
    """Headers of a JSON request, with ``key`` as ``Authorization: Bearer …`` when given."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def api_key(settings: Settings, env_name: str, setting: str) -> str | None:
    """The key held by the variable ``env_name`` names (None when no variable is named).

    Args:
        settings: where :func:`~knowhub.config.load_settings` captured the value.
        env_name: the variable's name, from a ``*api_key_env`` setting.
        setting: that setting's dotted name, for the error message.
    """
    if not env_name:
        return None
    key = settings.secret(env_name)
    if key is None:
        raise ConfigError(f"{secret_unset(setting, env_name, 'the key')}, or clear it")
    return key
