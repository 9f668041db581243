"""Wrong tokens are throttled per client address on both servers, over real HTTP.

Real ``serve http`` and ``serve mcp`` processes on loopback; each "client address" is a
real source address (Linux answers all of 127.0.0.0/8 on the loopback device), so the
server tells the guesser from everyone else exactly as it would on a network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp_types import CallToolResult

from tests.helpers import WAIT_S, write
from tests.http_helpers import FULL, READER, TOKEN_ENV, ApiServer, api_server, build_corpus
from tests.mcp_helpers import http_server

pytestmark = pytest.mark.anyio

LIMIT = 10  # server.auth_max_failures' default: these servers run with the defaults
GUESSES = [f"guess-{n}-Qm3xT8" for n in range(LIMIT)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServer]:
    root = tmp_path_factory.mktemp("auth-throttle")
    data = build_corpus(root)
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as running:
        yield running


def _client(address: str) -> httpx.Client:
    """A client whose requests come from ``address``."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=WAIT_S)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _assert_throttled(response: httpx.Response, address: str) -> None:
    assert response.status_code == 429, response.text
    wait = int(response.headers["retry-after"])
    assert 1 <= wait <= 60
    assert f"too many failed authentications from {address}: try again in {wait} s" in (
        response.text
    )


def test_wrong_bearer_tokens_get_401_then_429_for_that_address_only(server: ApiServer) -> None:
    search = {"query": "backups"}
    with _client("127.0.0.2") as guesser, _client("127.0.0.3") as other:
        for guess in GUESSES:
            wrong = guesser.post(server.url + "/api/search", json=search, headers=_bearer(guess))
            assert wrong.status_code == 401, wrong.text
        # Locked out: the right token too (or guessing would go on), on every route.
        right = guesser.post(server.url + "/api/search", json=search, headers=_bearer(FULL))
        _assert_throttled(right, "127.0.0.2")
        assert right.json()["status"] == 429
        _assert_throttled(
            guesser.get(server.url + "/metrics", headers=_bearer(READER)), "127.0.0.2"
        )
        assert guesser.get(server.url + "/health").json() == {"status": "ok"}  # no token: public
        # Everybody else goes on as before.
        assert (
            other.post(server.url + "/api/search", json=search, headers=_bearer(FULL)).status_code
            == 200
        )
    logs = server.logs()
    assert "authentication failed: wrong token from 127.0.0.2 for '/api/search'" in logs
    assert logs.count("wrong token from 127.0.0.2") == LIMIT  # the refusals after: not logged
    assert "127.0.0.2 locked out for 60 s: 10 failed authentications within 60 s" in logs
    for secret in (*GUESSES, FULL, READER):
        assert secret not in logs


def test_the_login_form_is_throttled_like_the_bearer_token(server: ApiServer) -> None:
    origin = {"Origin": server.url}
    with _client("127.0.0.4") as guesser, _client("127.0.0.5") as other:
        for guess in GUESSES:
            wrong = guesser.post(server.url + "/ui/login", data={"token": guess}, headers=origin)
            assert wrong.status_code == 401 and "wrong token" in wrong.text
        right = guesser.post(server.url + "/ui/login", data={"token": FULL}, headers=origin)
        _assert_throttled(right, "127.0.0.4")
        assert "set-cookie" not in right.headers and 'role="alert"' in right.text
        signed_in = other.post(server.url + "/ui/login", data={"token": FULL}, headers=origin)
        assert signed_in.status_code == 303
        assert "knowhub_session=" in signed_in.headers["set-cookie"]
    assert "authentication failed: wrong token from 127.0.0.4 for '/ui/login'" in server.logs()


def test_wrong_logins_and_wrong_bearer_tokens_count_together(server: ApiServer) -> None:
    origin = {"Origin": server.url}
    with _client("127.0.0.6") as guesser:
        for n, guess in enumerate(GUESSES):
            if n % 2:
                guesser.post(server.url + "/ui/login", data={"token": guess}, headers=origin)
            else:
                guesser.get(server.url + "/api/collections", headers=_bearer(guess))
        _assert_throttled(
            guesser.get(server.url + "/api/collections", headers=_bearer(FULL)), "127.0.0.6"
        )


async def test_bearer_guessing_on_mcp_is_throttled_and_configurable(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "guide.md", "# Guide\n\nThe vault rotates keys every ninety days.\n")
    tokens = [{"name": "full", "token_env": "KH_TEST_THROTTLE_FULL"}]
    env = {
        "KNOWHUB_SERVER__TOKENS": json.dumps(tokens),
        "KH_TEST_THROTTLE_FULL": FULL,
        "KNOWHUB_SERVER__AUTH_MAX_FAILURES": "3",
        "KNOWHUB_SERVER__AUTH_LOCKOUT_S": "600",
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with (
        http_server(
            "--docs", "docs", cwd=tmp_path, data_dir=tmp_path / "data", env=env, token=FULL
        ) as running,
        _client("127.0.0.2") as guesser,
    ):
        for guess in GUESSES[:3]:
            wrong = guesser.post(
                running.url + "/mcp", json=initialize, headers={**headers, **_bearer(guess)}
            )
            assert wrong.status_code == 401, wrong.text
        right = guesser.post(
            running.url + "/mcp", json=initialize, headers={**headers, **_bearer(FULL)}
        )
        assert right.status_code == 429 and 590 <= int(right.headers["retry-after"]) <= 600
        assert "too many failed authentications from 127.0.0.2" in right.json()["error"]
        async with running.client() as client:  # the real SDK client, from 127.0.0.1
            listed: CallToolResult = await client.call_tool("list_collections", {})
            assert not listed.is_error
        logs = running.logs()
    assert "authentication failed: wrong token from 127.0.0.2 for '/mcp'" in logs
    assert "127.0.0.2 locked out for 600 s: 3 failed authentications within 60 s" in logs
    for secret in (*GUESSES, FULL):
        assert secret not in logs


FORGED = {"X-Real-IP": "198.51.100.99", "Forwarded": "for=198.51.100.98"}


def _guess_with_forged_addresses(client: httpx.Client, url: str, forged_for: str) -> None:
    """Every wrong guess claims another client address (as a local process could)."""
    for n, guess in enumerate(GUESSES):
        headers = {**_bearer(guess), **FORGED, "X-Forwarded-For": forged_for.format(n=n)}
        wrong = client.get(url, headers=headers)
        assert wrong.status_code == 401, wrong.text


def test_forwarding_headers_from_a_peer_not_trusted_as_a_proxy_are_ignored(
    tmp_path: Path,
) -> None:
    data = build_corpus(tmp_path)
    with (
        api_server(cwd=tmp_path, data_dir=data, env=TOKEN_ENV, token=FULL) as server,
        _client("127.0.0.1") as local,
    ):
        url = server.url + "/api/collections"
        _guess_with_forged_addresses(local, url, "203.0.113.{n}")
        # The real peer is locked out, whatever address it claims next.
        claimed = {**_bearer(FULL), "X-Forwarded-For": "203.0.113.200"}
        _assert_throttled(local.get(url, headers=claimed), "127.0.0.1")
        logs = server.logs()
    assert logs.count("wrong token from 127.0.0.1") == LIMIT and "203.0.113" not in logs


def test_a_trusted_proxy_s_forwarded_client_is_the_one_locked_out(tmp_path: Path) -> None:
    data = build_corpus(tmp_path)
    env = {**TOKEN_ENV, "KNOWHUB_SERVER__TRUSTED_PROXIES": '["127.0.0.0/30"]'}
    with (
        api_server(cwd=tmp_path, data_dir=data, env=env, token=FULL) as server,
        _client("127.0.0.2") as proxy,
        _client("127.0.0.5") as direct,
    ):
        url = server.url + "/api/collections"
        _guess_with_forged_addresses(proxy, url, "198.51.100.7")
        as_guesser = {**_bearer(FULL), "X-Forwarded-For": "198.51.100.7"}
        _assert_throttled(proxy.get(url, headers=as_guesser), "198.51.100.7")
        # The proxy's other clients, and the proxy itself, go on.
        as_other = {**_bearer(FULL), "X-Forwarded-For": "198.51.100.8"}
        assert proxy.get(url, headers=as_other).status_code == 200
        assert proxy.get(url, headers=_bearer(FULL)).status_code == 200
        # A peer outside trusted_proxies cannot claim to be the guesser (nor escape as another).
        assert direct.get(url, headers=as_guesser).status_code == 200
        # Behind a TLS-terminating proxy: its X-Forwarded-Proto makes the console cookie Secure.
        tls = {"Origin": server.url, "X-Forwarded-Proto": "https"}
        signed_in = proxy.post(server.url + "/ui/login", data={"token": FULL}, headers=tls)
        assert "Secure" in signed_in.headers["set-cookie"]
        signed_in = direct.post(server.url + "/ui/login", data={"token": FULL}, headers=tls)
        assert "Secure" not in signed_in.headers["set-cookie"]
    assert "wrong token from 198.51.100.7" in server.logs()


async def test_mcp_ignores_forwarding_headers_from_an_untrusted_peer(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "guide.md", "# Guide\n\nThe vault rotates keys every ninety days.\n")
    env = {"KNOWHUB_SERVER__TOKENS": json.dumps([{"name": "full", "token_env": "KH_TEST_F"}])}
    with (
        http_server(
            "--docs",
            "docs",
            cwd=tmp_path,
            data_dir=tmp_path / "data",
            env={**env, "KH_TEST_F": FULL},
        ) as running,
        _client("127.0.0.1") as local,
    ):
        _guess_with_forged_addresses(local, running.url + "/metrics", "203.0.113.{n}")
        claimed = {**_bearer(FULL), "X-Forwarded-For": "203.0.113.200"}
        _assert_throttled(local.get(running.url + "/metrics", headers=claimed), "127.0.0.1")
