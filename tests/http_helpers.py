"""Run real ``knowhub serve http`` processes and read their streams as a client would."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx

from knowhub.testing.llm_server import LlmServer
from tests.gated_model import GatedModel
from tests.helpers import WAIT_S, tls
from tests.mcp_helpers import running


@dataclass
class ApiServer:
    """A ``knowhub serve http`` child process."""

    url: str
    process: subprocess.Popen[str]
    log: Path
    token: str | None = None

    def headers(self, token: str | None = None) -> dict[str, str]:
        value = token if token is not None else self.token
        return {"Authorization": f"Bearer {value}"} if value else {}

    def get(self, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers(token), **kwargs.pop("headers", {})}
        return httpx.get(self.url + path, headers=headers, timeout=WAIT_S, verify=tls(), **kwargs)

    def post(self, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers(token), **kwargs.pop("headers", {})}
        return httpx.post(self.url + path, headers=headers, timeout=WAIT_S, verify=tls(), **kwargs)

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1) + "/api/stream"

    def logs(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def api_server(
    *serve_args: str,
    cwd: Path,
    data_dir: Path,
    env: dict[str, str] | None = None,
    token: str | None = None,
    preexec: Callable[[], None] | None = None,
) -> Iterator[ApiServer]:
    """Run ``knowhub --data-dir D serve http --port P SERVE_ARGS`` until the block ends."""
    argv = ["--data-dir", str(data_dir), "serve", "http", *serve_args]
    with running(argv, cwd, env, preexec) as (url, process, log):
        yield ApiServer(url, process, log, token)


@dataclass
class SseEvent:
    event: str
    data: dict[str, Any]


def sse_events(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Parse a ``text/event-stream`` body line by line, each event as it arrives."""
    kind, data = "message", []
    for line in lines:
        if line == "":
            if data:
                yield SseEvent(kind, json.loads("\n".join(data)))
            kind, data = "message", []
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


def read_sse(lines: Iterator[str]) -> list[SseEvent]:
    """Every event of a ``text/event-stream`` body."""
    return list(sse_events(lines))


def llm_env(llm: LlmServer | GatedModel, **extra: str) -> dict[str, str]:
    """The environment of a server whose model is ``llm`` (an OpenAI-compatible fake)."""
    return {
        "KNOWHUB_LLM__PROVIDER": "openai",
        "KNOWHUB_LLM__BASE_URL": llm.openai_base,
        "KNOWHUB_LLM__MODEL": "test-model",
        "KNOWHUB_LLM__BACKOFF_S": "0",
        **extra,
    }


FULL = "full-Xc4nR8vB2mQ7tLp1"
READER = "reader-Jw6dK1sF9hG3yUe5"
LIMITED = "limited-Pz2aT5oN7cV0bMq8"
TOKENS = [
    {"name": "full", "token_env": "KH_TEST_API_FULL"},
    {"name": "reader", "token_env": "KH_TEST_API_READER", "read_only": True},
    {"name": "limited", "token_env": "KH_TEST_API_LIMITED", "collections": ["default"]},
]
TOKEN_ENV = {
    "KNOWHUB_SERVER__TOKENS": json.dumps(TOKENS),
    "KH_TEST_API_FULL": FULL,
    "KH_TEST_API_READER": READER,
    "KH_TEST_API_LIMITED": LIMITED,
}
OPS = (
    "# Operations\n\n## Backups\n\nDatabase backups run every 6 hours.\nThey are kept for 35 "
    "days.\n\n## Access\n\nUse the VPN for the console.\n"
)
HR = "# HR\n\n## Leave\n\nEmployees get 28 days of annual leave.\n"
MINUTES = "# Board minutes\n\nThe orchid merger closes in spring; nobody outside the board knows.\n"


def build_corpus(root: Path, **overrides: object) -> Path:
    """Index ops.md and hr.md into ``default`` and minutes.md into ``private``; the data dir
    (``overrides``: settings, such as another store)."""
    from knowhub import build_app
    from tests.helpers import fast_settings, write

    write(root / "docs/ops.md", OPS)
    write(root / "docs/team/hr.md", HR)
    write(root / "private/minutes.md", MINUTES)
    data = root / "data"
    app = build_app(fast_settings(data, **overrides))
    try:
        for folder, collection in (("docs", "default"), ("private", "private")):
            report = app.collection(collection).ingest([root / folder])
            assert not report.failed, report.failed
    finally:
        app.close()
    return data
