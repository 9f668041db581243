"""POST JSON, get JSON: the one HTTP helper of the remote providers (stdlib only).

Errors become :class:`~knowhub.errors.ProviderError` messages naming the URL and
the cause; request headers (and so API keys) never appear in them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError, ProviderError

__all__ = ["api_key", "post_json"]

_EXCERPT = 300


def post_json(
    url: str,
    body: Mapping[str, Any],
    *,
    timeout_s: float,
    api_key: str | None = None,
    what: str = "provider",
) -> Any:
    """POST ``body`` as JSON to ``url`` and return the decoded JSON answer.

    Args:
        url: the full endpoint.
        body: the JSON request body.
        timeout_s: socket timeout for connecting and for each read.
        api_key: sent as ``Authorization: Bearer …`` when given.
        what: the caller's name, for error messages (e.g. ``reranker http``).
    """
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw: bytes = response.read()
    except urllib.error.HTTPError as exc:
        try:
            detail = exc.read(_EXCERPT).decode("utf-8", errors="replace").strip()
        finally:
            exc.close()
        raise ProviderError(f"{what}: {url} answered HTTP {exc.code}: {detail}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError):
            raise ProviderError(f"{what}: {url} timed out after {timeout_s:g} s") from exc
        raise ProviderError(
            f"{what}: cannot reach {url} ({reason}); check the URL and that the server runs"
        ) from exc
    try:
        return json.loads(raw)
    except ValueError as exc:
        excerpt = raw[:_EXCERPT].decode("utf-8", errors="replace")
        raise ProviderError(f"{what}: {url} did not answer JSON: {excerpt!r}") from exc


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
        raise ConfigError(f"{setting} names ${env_name}, which is not set: export it or clear it")
    return key
