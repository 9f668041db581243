"""Logic of the MCP server that needs no running server: tokens, paths, budgets, durations."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import threading
from pathlib import Path
from typing import cast

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from knowhub import load_settings
from knowhub.caller import LOCAL_USER, Caller
from knowhub.errors import AuthError, ConfigError, KnowhubError, QueryError
from knowhub.interfaces.cli.serve import parse_duration
from knowhub.interfaces.index_metrics import IndexSize
from knowhub.interfaces.listen import bind
from knowhub.interfaces.mcp.http import build_http_app
from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.server import _reaper
from knowhub.interfaces.mcp.shared import SessionRegistry
from knowhub.interfaces.mcp.tools.base import inside_root, tool_errors
from knowhub.interfaces.mcp.tools.search import _search_markdown, _search_out
from knowhub.interfaces.mcp.toolserver import invalid_arguments
from knowhub.interfaces.security import PRINCIPAL_KEY, TokenBook, _matches
from knowhub.models import Hit
from knowhub.testing.hits import hit
from tests.helpers import WAIT_S

TOKENS = (
    '[{"name": "admin", "token_env": "TOK_ADMIN"},'
    ' {"name": "reader", "token_env": "TOK_READER", "collections": ["docs"],'
    '  "sessions": ["s1"], "read_only": true}]'
)


def _book(**env: str) -> TokenBook:
    return TokenBook(load_settings(env={"KNOWHUB_SERVER__TOKENS": TOKENS, **env}))


def test_tokens_map_to_their_principals_and_nothing_else() -> None:
    book = _book(TOK_ADMIN="a-secret", TOK_READER="r-secret")
    assert book
    admin = book.lookup("Bearer a-secret")
    reader = book.lookup("bearer r-secret")
    assert admin is not None and admin.name == "admin" and not admin.read_only
    assert reader is not None and reader.read_only
    assert reader.may_read("docs") and not reader.may_read("other")
    assert reader.may_use("s1") and not reader.may_use("s2")
    for header in (None, "", "Bearer", "Bearer ", "Basic a-secret", "Bearer a-secret2", "a-secret"):
        assert book.lookup(header) is None, header
    with pytest.raises(AuthError, match="'reader' is read-only"):
        reader.check_write("ingest")
    with pytest.raises(AuthError, match="may not read collection 'other'"):
        reader.check_read("other")
    LOCAL_USER.check_write("ingest")
    LOCAL_USER.check_read("anything")


def test_a_token_whose_variable_is_unset_stops_the_server_with_its_name() -> None:
    with pytest.raises(ConfigError, match="names TOK_READER, which is not set"):
        _book(TOK_ADMIN="a-secret")
    assert not TokenBook(load_settings(env={}))


def test_secrets_stay_out_of_the_settings_dump() -> None:
    settings = load_settings(
        env={"KNOWHUB_SERVER__TOKENS": TOKENS, "TOK_ADMIN": "a-secret", "TOK_READER": "r-x"}
    )
    assert "a-secret" not in repr(settings) and "a-secret" not in str(settings.model_dump())


def test_paths_must_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    assert inside_root(root, "sub") == (root / "sub").resolve()
    assert inside_root(root, str(root / "sub")) == (root / "sub").resolve()
    for bad, why in [
        ("../outside", "contains '..'"),
        ("sub/../../outside", "contains '..'"),
        (str(tmp_path / "outside"), "outside the document root"),
        ("link", "outside the document root"),
        ("/etc", "outside"),
    ]:
        with pytest.raises(KnowhubError, match=why):
            inside_root(root, bad)


def _hit(n: int, text: str) -> Hit:
    return hit(
        text,
        chunk_id=f"c{n}",
        score=1.0 / n,
        source=f"doc{n}.md",
        title="t",
        section_path="A > B",
        line_end=3,
        doc_hash=f"{n:064d}",
    )


def test_the_result_budget_bounds_the_text_and_says_so() -> None:
    hits = [_hit(n, "word " * 200) for n in range(1, 6)]
    whole = _search_out("q", "default", hits, 100_000, {})
    assert len(whole.hits) == 5 and not whole.truncated
    assert not any(h.truncated for h in whole.hits)
    small = _search_out("q", "default", hits, 1_500, {})
    assert small.truncated and 1 <= len(small.hits) < 5
    assert sum(len(h.text) for h in small.hits) <= 1_500
    assert [h.n for h in small.hits] == list(range(1, len(small.hits) + 1))
    assert small.hits[-1].truncated and small.hits[-1].text.endswith("…")
    assert len(_search_markdown(small)) <= 1_500 < len(_search_markdown(whole))


def test_origin_and_host_patterns() -> None:
    allowed = ["http://localhost:*", "https://app.example.com"]
    assert _matches("http://localhost:5173", allowed)
    assert _matches("https://app.example.com", allowed)
    assert not _matches("http://localhost.evil.com", allowed)
    assert not _matches("http://localhost:80x", allowed)
    assert not _matches("https://app.example.com.evil", allowed)
    assert not _matches("http://evil.example", allowed)


def test_durations() -> None:
    assert parse_duration("30m", "--t") == 1800.0
    assert parse_duration("90s", "--t") == parse_duration("90", "--t") == 90.0
    assert parse_duration("2h", "--t") == 7200.0
    assert parse_duration("0", "--t") is None
    with pytest.raises(QueryError, match="--t 'soon' is not a duration"):
        parse_duration("soon", "--t")


def test_principal_wildcards() -> None:
    everyone = Caller("x")
    assert everyone.may_read("any") and everyone.may_use("any")


@pytest.mark.anyio
async def test_an_unexpected_exception_is_a_tool_error_naming_the_call_and_the_fix() -> None:
    # The SDK shows a crash as a bare "Error executing tool register"; the wrapper names it.
    server = MCPServer("t")
    metrics = Metrics()

    @server.tool(name="register")
    async def register(path: str) -> str:
        with tool_errors(metrics, "register", {"path": path}):
            Path(path).stat()  # ValueError: embedded null byte
        return "unreachable"

    async with Client(server) as client:
        result = await client.call_tool("register", {"path": "a\x00b"})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "register(path='a\\x00b') failed: ValueError: embedded null byte" in text
    assert "check these arguments" in text
    labels = {"tool": "register", "outcome": "error"}
    assert metrics.registry.get_sample_value("knowhub_tool_calls_total", labels) == 1


def test_paths_with_nul_or_a_symlink_loop_are_refused_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(KnowhubError, match=r"path 'a\\x00' contains a NUL character"):
        inside_root(tmp_path, "a\x00")
    for bad in ("loop", "loop/deeper"):
        with pytest.raises(KnowhubError, match=rf"path '{bad}' cannot be resolved .*symlink"):
            inside_root(tmp_path, bad)


def test_a_port_that_cannot_be_bound_names_the_option_to_change() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"^port {port} is in use on 127\.0\.0\.1: choose"):
            bind("127.0.0.1", port)
    with pytest.raises(ConfigError, match=r"--host 192\.0\.2\.1 is not an address of this"):
        bind("192.0.2.1", 0)  # TEST-NET-1: never a local address
    with bind("127.0.0.1", 0) as fine:
        assert fine.getsockname()[1] > 0


def test_invalid_arguments_are_listed_without_pydantic_boilerplate() -> None:
    class Arguments(BaseModel):
        query: str = Field(min_length=1)
        top_k: int = Field(le=20)
        path: str

    with pytest.raises(ValidationError) as caught:
        Arguments.model_validate({"query": "", "top_k": 99})
    text = invalid_arguments(caught.value)
    assert text == (
        "3 invalid arguments: query: String should have at least 1 character (given ''); "
        "top_k: Input should be less than or equal to 20 (given 99); path: Field required"
    )
    with pytest.raises(ValidationError) as caught:
        Arguments.model_validate({"query": "x" * 500, "top_k": 1, "path": 3})
    assert invalid_arguments(caught.value).startswith(
        "1 invalid argument: path: Input should be a valid string (given 3)"
    )


def test_health_and_metrics_are_worked_out_off_the_event_loop() -> None:
    # A limited token's /health reads the store (its collections' counts), and so does each
    # scrape (the index sizes): on the event loop, every other request would wait for it.
    where: list[str] = []

    def seen() -> None:
        try:
            asyncio.get_running_loop()
            where.append("event loop")
        except RuntimeError:
            where.append("worker thread")

    def health(principal: Caller | None) -> dict[str, str]:
        seen()
        return {"status": "ok"}

    def sizes() -> list[IndexSize]:
        seen()
        return []

    def as_local_user(app: ASGIApp) -> ASGIApp:
        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            await app({**scope, PRINCIPAL_KEY: LOCAL_USER}, receive, send)

        return guarded

    metrics = Metrics()
    metrics.track_index(sizes)
    app = build_http_app(routes=[], guard=as_local_user, servers=[], metrics=metrics, health=health)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/health").json() == {"status": "ok"}
        assert client.get("/metrics").status_code == 200
    assert where == ["worker thread", "worker thread"]


class _FailingOnce:
    """A registry whose first idle check fails (sessions.sqlite3 locked), then counts."""

    idle_timeout_s = 0.1  # the reaper's shortest interval: 1 s

    def __init__(self) -> None:
        self.checks = 0
        self.again = threading.Event()

    def unload_idle(self) -> None:
        self.checks += 1
        if self.checks == 1:
            raise sqlite3.OperationalError("database is locked")
        self.again.set()


@pytest.mark.anyio
async def test_a_failed_idle_check_leaves_the_shared_server_serving() -> None:
    """Escaping the reaper, the error ended the lifespan's task group, and with it the MCP
    session managers of every shared-mode request, while /health went on answering."""
    registry = _FailingOnce()
    async with anyio.create_task_group() as group:
        group.start_soon(_reaper(cast(SessionRegistry, registry)))
        # Abandoned on cancel: the reaper failing cancels this wait, and the error is raised.
        await anyio.to_thread.run_sync(registry.again.wait, WAIT_S, abandon_on_cancel=True)
        group.cancel_scope.cancel()
    assert registry.checks >= 2
