"""The failed-authentication limiter, the token book around it, and scoped index metrics.

A fake clock stands in for time: the limiter takes it as an argument, so nothing sleeps.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from knowhub.caller import LOCAL_USER, Caller
from knowhub.interfaces.index_metrics import IndexSize, IndexSizes
from knowhub.interfaces.security import FailureLimiter, ThrottledError, TokenBook
from tests.helpers import fast_settings

SECRET = "s3cret-Vb7nQ2xL"
OTHER = "other-Kd4mW9pZ"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _book(tmp_path: Path, clock: Clock, **server: object) -> TokenBook:
    overrides = {f"server.{key}": value for key, value in server.items()}
    settings = fast_settings(
        tmp_path / "data",
        **{
            "server.tokens": [
                {"name": "me", "token_env": "KH_UNIT_ME"},
                {"name": "other", "token_env": "KH_UNIT_OTHER"},
            ],
            **overrides,
        },
    )
    settings._secrets.update({"KH_UNIT_ME": SECRET, "KH_UNIT_OTHER": OTHER})
    return TokenBook(settings, clock=clock)


def test_an_address_over_the_limit_is_locked_out_until_the_lockout_passes() -> None:
    clock = Clock()
    limiter = FailureLimiter(limit=3, window_s=60, lockout_s=30, clock=clock)
    assert [limiter.failed("10.0.0.1") for _ in range(3)] == [False, False, True]
    assert limiter.locked("10.0.0.1") == 30
    assert limiter.locked("10.0.0.2") is None
    clock.now += 29.5
    assert limiter.locked("10.0.0.1") == 1  # rounded up: never "retry in 0 s"
    clock.now += 0.5
    assert limiter.locked("10.0.0.1") is None
    assert limiter.failed("10.0.0.1") is False  # a fresh start after the lockout


def test_failures_older_than_the_window_do_not_count() -> None:
    clock = Clock()
    limiter = FailureLimiter(limit=3, window_s=60, lockout_s=30, clock=clock)
    limiter.failed("10.0.0.1")
    limiter.failed("10.0.0.1")
    clock.now += 61
    assert limiter.failed("10.0.0.1") is False
    assert limiter.failed("10.0.0.1") is False
    assert limiter.failed("10.0.0.1") is True


def test_the_table_of_addresses_is_bounded_and_forgets_the_stalest_first() -> None:
    clock = Clock()
    limiter = FailureLimiter(limit=2, window_s=60, lockout_s=30, max_clients=100, clock=clock)
    limiter.failed("victim")
    limiter.failed("victim")
    assert limiter.locked("victim") == 30
    for n in range(99):
        limiter.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(limiter) == 100 and limiter.locked("victim") == 30
    limiter.failed("one-too-many")
    assert len(limiter) == 100 and limiter.locked("victim") is None


def test_a_locked_address_is_refused_even_the_right_token_and_others_are_not(
    tmp_path: Path,
) -> None:
    clock = Clock()
    book = _book(tmp_path, clock, auth_max_failures=2, auth_window_s=60, auth_lockout_s=45)
    assert book.authenticate(f"Bearer {SECRET}", "10.0.0.1", "/api/search") == Caller("me")
    assert book.authenticate("Bearer guess-1", "10.0.0.1", "/api/search") is None
    assert book.authenticate("Bearer guess-2", "10.0.0.1", "/api/search") is None
    with pytest.raises(ThrottledError) as refused:
        book.authenticate(f"Bearer {SECRET}", "10.0.0.1", "/api/search")
    assert refused.value.retry_after == 45
    assert "10.0.0.1" in str(refused.value) and "45 s" in str(refused.value)
    assert book.authenticate(f"Bearer {OTHER}", "10.0.0.2", "/mcp") == Caller("other")
    clock.now += 45
    assert book.authenticate(f"Bearer {SECRET}", "10.0.0.1", "/api/search") == Caller("me")


@pytest.mark.parametrize("sent", [None, "", "Bearer", "Bearer   "])
def test_sending_no_token_is_not_a_failed_attempt(tmp_path: Path, sent: str | None) -> None:
    book = _book(tmp_path, Clock(), auth_max_failures=1)
    for _ in range(3):
        assert book.authenticate(sent, "10.0.0.1", "/api/search") is None
    assert book.failures.locked("10.0.0.1") is None


def test_successes_neither_count_nor_wipe_out_earlier_failures(tmp_path: Path) -> None:
    book = _book(tmp_path, Clock(), auth_max_failures=2)
    book.authenticate("Bearer guess-1", "10.0.0.1", "/mcp")
    for _ in range(50):
        assert book.authenticate(f"Bearer {SECRET}", "10.0.0.1", "/mcp") == Caller("me")
    book.authenticate("Bearer guess-2", "10.0.0.1", "/mcp")
    assert book.failures.locked("10.0.0.1") is not None


def test_tokens_of_any_length_are_looked_up_by_digest(tmp_path: Path) -> None:
    book = _book(tmp_path, Clock())
    for wrong in ("s", SECRET[:-1], SECRET + "x", SECRET * 40, "\u00e9" * 3):
        assert book.lookup(f"Bearer {wrong}") is None
    assert book.lookup(f"bearer  {SECRET} ") == Caller("me")
    assert SECRET not in repr(vars(book))  # only digests are kept


def test_failures_are_logged_with_address_and_path_but_never_the_token(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    book = _book(tmp_path, Clock(), auth_max_failures=2, auth_lockout_s=60)
    guess = SECRET[:-2] + "zz"
    with caplog.at_level(logging.WARNING, logger="knowhub.security"):
        for n in range(2):  # two distinct guesses (one retried would count once)
            book.authenticate(f"Bearer {guess}{n}", "10.0.0.9", "/ui/login\nforged line")
        with pytest.raises(ThrottledError):
            book.authenticate(f"Bearer {guess}", "10.0.0.9", "/ui/login")
    lines = [r.getMessage() for r in caplog.records]
    # %r: a newline in the path cannot forge a log line of its own.
    assert lines[0] == (
        "authentication failed: wrong token from 10.0.0.9 for '/ui/login\\nforged line'"
    )
    assert lines[2] == "10.0.0.9 locked out for 60 s: 2 failed authentications within 60 s"
    assert len(lines) == 3  # refusals while locked out are not logged: no log flood
    assert not any(guess in line or SECRET in line for line in lines)


def _series(text: bytes) -> dict[str, float]:
    return {
        f"{s.name}:{s.labels['collection']}": s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_index_sizes_show_only_what_the_scraping_token_may_read() -> None:
    sizes = IndexSizes(
        lambda: [
            IndexSize("handbook", 3, 30, active_version=2),
            IndexSize("private", 1, 4),
            IndexSize("default", 2, 5, session="aaaa"),
            IndexSize("default", 7, 9, session="bbbb"),
        ]
    )
    everything = _series(sizes.render(LOCAL_USER))
    assert everything["knowhub_index_chunks:private"] == 4
    assert everything["knowhub_index_documents:bbbb/default"] == 7
    limited = Caller(
        "limited", collections=frozenset({"handbook", "default"}), sessions=frozenset({"aaaa"})
    )
    assert _series(sizes.render(limited)) == {
        "knowhub_index_documents:handbook": 3,
        "knowhub_index_chunks:handbook": 30,
        "knowhub_index_active_version:handbook": 2,
        "knowhub_index_documents:aaaa/default": 2,
        "knowhub_index_chunks:aaaa/default": 5,
        "knowhub_index_active_version:aaaa/default": 1,
    }
    nobody = sizes.render(None).decode()
    assert "# TYPE knowhub_index_chunks gauge" in nobody and "private" not in nobody


def test_one_stale_token_retried_locks_nobody_out_but_distinct_guesses_do(tmp_path: Path) -> None:
    # A browser with an old cookie resent one wrong token on every page and asset: ten of
    # those locked the address, so the person then typing the right token got 429.
    book = _book(tmp_path, Clock(), auth_max_failures=3)
    for _ in range(20):
        assert book.authenticate("Bearer stale-token", "10.0.0.1", "/ui") is None
    assert book.authenticate(f"Bearer {SECRET}", "10.0.0.1", "/ui/login") is not None
    for n in range(2):
        assert book.authenticate(f"Bearer guess-{n}", "10.0.0.1", "/api/search") is None
    with pytest.raises(ThrottledError):  # the third distinct wrong token locked it
        book.authenticate(f"Bearer {SECRET}", "10.0.0.1", "/api/search")
