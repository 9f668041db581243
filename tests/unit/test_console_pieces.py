"""The web console's small parts: chart geometry, where a login may lead, the same-origin
check, and the guard taking the login cookie under /ui only."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from knowhub.caller import Caller
from knowhub.errors import AuthError
from knowhub.interfaces.http.console.auth import CONSOLE_LOGIN, check_same_origin, safe_next
from knowhub.interfaces.http.console.charts import metric_groups, stage_bars, waterfall_spans
from knowhub.interfaces.security import Guard, SessionBook, TokenBook
from knowhub.trace.record import Trace
from tests.helpers import fast_settings


def test_stage_bars_are_scaled_to_the_longest_stage() -> None:
    bars = stage_bars({"lexical": 2.0, "dense": 8.0, "fusion": 0.0})
    assert [(b.stage, b.width) for b in bars] == [
        ("lexical", 25.0),
        ("dense", 100.0),
        ("fusion", 0.5),
    ]


def test_the_waterfall_lays_stages_end_to_end_and_first_token_is_a_moment() -> None:
    trace = Trace(
        "t",
        "answer",
        "http",
        "default",
        "2026-01-01T00:00:00Z",
        duration_ms=100.0,
        stages_ms={
            "lexical": 10.0,
            "prompt_build": 10.0,
            "llm_first_token": 30.0,
            "llm_total": 80.0,
        },
        stage_hits={"lexical": 7},
    )
    spans = {s.stage: s for s in waterfall_spans(trace)}
    assert (spans["lexical"].start, spans["lexical"].width, spans["lexical"].hits) == (0, 10, 7)
    assert (spans["prompt_build"].start, spans["prompt_build"].width) == (10, 10)
    first = spans["llm_first_token"]
    assert first.moment and first.start == 50.0 and first.width == 0  # 30 ms into llm_total
    assert (spans["llm_total"].start, spans["llm_total"].width) == (20, 80)


def test_metric_groups_put_each_run_beside_the_others() -> None:
    runs = [
        {"name": "a", "created": "2026-01-01T10:00", "metrics": {"ndcg@10": 0.5, "x": "n/a"}},
        {
            "name": "b",
            "split": "test",
            "created": "2026-01-02T10:00",
            "metrics": {"ndcg@10": 1.5, "mrr@10": 0.25},
        },
    ]
    groups = metric_groups(runs)
    assert [g.metric for g in groups] == ["ndcg@10", "mrr@10"]  # "x" is not a number
    assert [(label, value) for label, value, _ in groups[0].values] == [
        ("a 2026-01-01 10:00", 0.5),
        ("b (test) 2026-01-02 10:00", 1.0),
    ]
    assert [label for label, _, _ in groups[1].values] == ["b (test) 2026-01-02 10:00"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/ui/traces?kind=search", "/ui/traces?kind=search"),
        ("/ui", "/ui"),
        (None, "/ui/ask"),
        ("//evil.example/ui", "/ui/ask"),
        ("https://evil.example/ui", "/ui/ask"),
        ("/api/search", "/ui/ask"),
        ("/uix", "/ui/ask"),
        ("/ui\\@evil", "/ui/ask"),
    ],
)
def test_after_signing_in_only_console_pages_are_a_destination(
    target: str | None, expected: str
) -> None:
    assert safe_next(target) == expected


def _request(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "POST", "path": "/ui/login", "headers": raw})


def test_only_the_consoles_own_pages_may_post() -> None:
    check_same_origin(_request({"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:8000"}))
    check_same_origin(_request({"Host": "kb.example", "Sec-Fetch-Site": "same-origin"}))
    refused = [
        {"Host": "127.0.0.1:8000", "Origin": "http://127.0.0.1:5173"},
        {"Host": "127.0.0.1:8000", "Origin": "null"},
        {"Host": "127.0.0.1:8000", "Sec-Fetch-Site": "cross-site"},
        {"Host": "127.0.0.1:8000"},
    ]
    for headers in refused:
        with pytest.raises(AuthError, match="console"):
            check_same_origin(_request(headers))


# -- the guard and the login cookie ------------------------------------------------------


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _call(guard: Guard, path: str, method: str = "GET", **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    scope = {"type": "http", "method": method, "path": path, "query_string": b"a=1", "headers": raw}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    anyio.run(guard, scope, receive, send)
    start = sent[0]
    return {"status": start["status"], "headers": dict(start["headers"])}


@pytest.fixture
def tokens(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> TokenBook:
    settings = fast_settings(
        tmp_path / "data", **{"server.tokens": [{"name": "me", "token_env": "KH_UNIT_TOKEN"}]}
    )
    settings._secrets["KH_UNIT_TOKEN"] = "s3cret"
    return TokenBook(settings)


def test_the_login_cookie_counts_under_ui_only(tokens: TokenBook) -> None:
    guard = Guard(_inner, tokens, [], None, 1024, frozenset({"/ui/login"}), CONSOLE_LOGIN)
    me = tokens.lookup("Bearer s3cret")
    assert me is not None
    cookie = f"other=1; knowhub_session={tokens.sessions.open(me)}"
    assert _call(guard, "/ui/traces", cookie=cookie)["status"] == 200
    assert _call(guard, "/ui", cookie=cookie)["status"] == 200
    assert _call(guard, "/api/collections", cookie=cookie)["status"] == 401
    assert _call(guard, "/uix", cookie=cookie)["status"] == 401
    assert _call(guard, "/ui", cookie="knowhub_session=wrong")["status"] == 303
    # The token itself in the cookie is no session: the cookie never holds a token.
    assert _call(guard, "/ui", cookie="knowhub_session=s3cret")["status"] == 303
    assert _call(guard, "/ui", cookie="knowhub_token=s3cret")["status"] == 303
    assert _call(guard, "/ui/login")["status"] == 200  # public: the form itself


def test_sessions_end_at_sign_out_on_expiry_and_when_too_many() -> None:
    now = [0.0]
    me = Caller("me", token_id="me-token")
    tokens = {me.token_id: me}
    book = SessionBook(tokens.get, ttl_s=100.0, max_sessions=3, clock=lambda: now[0])
    first, second = book.open(me), book.open(me)
    assert first != second and len(first) >= 43  # 256 random bits, URL-safe
    assert book.lookup(first) == me and book.lookup("") is None and book.lookup(None) is None
    book.close(first)
    assert book.lookup(first) is None and book.lookup(second) == me
    now[0] = 100.0
    assert book.lookup(second) is None, "expired"
    kept = [book.open(me) for _ in range(4)]
    assert len(book) == 3 and book.lookup(kept[0]) is None  # the oldest sign-in went first
    assert all(book.lookup(s) == me for s in kept[1:])
    del tokens[me.token_id]  # the token is no longer configured: its sign-ins end
    assert book.lookup(kept[-1]) is None


def test_a_page_without_a_token_redirects_to_the_login_form(tokens: TokenBook) -> None:
    guard = Guard(_inner, tokens, [], None, 1024, frozenset({"/ui/login"}), CONSOLE_LOGIN)
    page = _call(guard, "/ui/traces")
    assert page["status"] == 303
    assert page["headers"][b"location"] == b"/ui/login?next=%2Fui%2Ftraces%3Fa%3D1"
    assert _call(guard, "/ui/traces/x/save-case", method="POST")["status"] == 401


def test_without_a_cookie_login_the_guard_ignores_cookies(tokens: TokenBook) -> None:
    guard = Guard(_inner, tokens, [], None, 1024)  # as the MCP server builds it
    me = tokens.lookup("Bearer s3cret")
    assert me is not None
    assert (
        _call(guard, "/ui", cookie=f"knowhub_session={tokens.sessions.open(me)}")["status"] == 401
    )
    assert _call(guard, "/mcp", authorization="Bearer s3cret")["status"] == 200
