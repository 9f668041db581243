"""The console in a real Chromium behind a round-robin proxy in front of two ``serve http``
replicas over one store (a SQLite data dir, a PostgreSQL database): the browser signs in on
one replica, browses and asks on whichever answers next, and its conversation goes on
across them; signing out on one ends the session on both."""

from __future__ import annotations

import re

from playwright.sync_api import BrowserContext, Page, expect

from knowhub.testing.llm_server import LlmServer
from tests import replica_helpers
from tests.console_helpers import open_ask
from tests.http_helpers import READER
from tests.integration.test_http_answers import FOLLOW_UP
from tests.replica_helpers import Replicas

QUESTION = "How often do database backups run?"

# The fixtures: two replicas over each backend, and their model.
pair, llm = replica_helpers.pair, replica_helpers.llm


def _ask(page: Page, question: str) -> None:
    before = page.locator("#conversation .turn").count()
    page.fill("#question", question)
    page.click("#ask-button")
    answer = page.locator("#conversation .turn").nth(before).locator(".answer")
    expect(answer).to_have_attribute("data-done", "1")


def test_a_browser_session_and_its_conversation_span_both_replicas(
    context: BrowserContext, pair: Replicas, llm: LlmServer
) -> None:
    url = pair.proxy.url
    page = open_ask(context, url, READER)  # signed in on one replica, landed via the other
    assert pair.proxy.served_by("POST /ui/login") | pair.proxy.served_by("GET /ui/ask") == (
        pair.urls
    )
    _ask(page, QUESTION)
    _ask(page, FOLLOW_UP)
    assert pair.proxy.served_by("POST /ui/ask/stream") == pair.urls  # one answer from each
    # The follow-up was rewritten with the first turn, which the other replica answered.
    rewrite = llm.requests[-2].body["messages"][-1]["content"]
    assert f"user: {QUESTION}" in rewrite and rewrite.endswith(f"Last question: {FOLLOW_UP}")
    for _ in range(2):  # browsing: a page from each replica
        page.goto(url + "/ui/documents")
        expect(page.locator("main")).to_contain_text("ops.md")
    page.goto(url + "/ui/ask")
    page.click("button:has-text('Sign out')")
    expect(page).to_have_url(re.compile(r"/ui/login"))
    for _ in range(2):  # signed out of both
        page.goto(url + "/ui/documents")
        expect(page).to_have_url(re.compile(r"/ui/login\?next="))
