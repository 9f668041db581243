"""The console's Ask page in a real Chromium against a real server process: a question's
answer streamed with citation links, follow-ups in one session, an answer the documents do
not hold, feedback kept with the trace, a token's collections, forged posts refused."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from knowhub import build_app
from tests.console_helpers import open_ask, screenshots, sign_in
from tests.helpers import WAIT_S, fast_settings, write
from tests.http_helpers import FULL, LIMITED, TOKEN_ENV, ApiServer, api_server, build_corpus

QUESTION = "How often do database backups run?"
FAQ = "How do I reset my password?"
CHUNK_LINK = re.compile(r"^/ui/source/[0-9A-Za-z_:.%-]+$")


@dataclass
class Console:
    server: ApiServer
    data: Path

    def url(self, path: str) -> str:
        return self.server.url + path


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    root = tmp_path_factory.mktemp("ask")
    data = build_corpus(root)
    faq = write(root / "faq.csv", f"question,answer\n{FAQ},Use the self-service portal.\n")
    app = build_app(fast_settings(data))
    try:
        app.collection("default").faq_import([faq])
    finally:
        app.close()
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield Console(server, data)


@pytest.fixture
def page(context: BrowserContext, console: Console) -> Page:
    return open_ask(context, console.server.url, FULL)


def _ask(page: Page, question: str) -> None:
    before = page.locator("#conversation .turn").count()
    page.fill("#question", question)
    page.click("#ask-button")
    turn = page.locator("#conversation .turn").nth(before)
    expect(turn.locator(".answer")).to_have_attribute("data-done", "1")


def test_an_empty_page_says_what_to_do(page: Page) -> None:
    expect(page.locator("#empty")).to_contain_text("No questions yet")
    expect(page.locator("nav a.here")).to_have_text("Ask")
    screenshots(page, "ask-empty", ["#question", "#ask-button", "#collection", "#empty"])


def test_an_answer_streams_in_with_its_citations_linked_to_their_source(page: Page) -> None:
    tokens = page.evaluate_handle("[]")  # every text the answer showed while it streamed
    page.evaluate(
        """seen => new MutationObserver(() => {
             for (const a of document.querySelectorAll('.answer.pending'))
               if (a.textContent && a.closest('.turn').querySelector('.diag').hidden)
                 seen.push(a.textContent);  // text before the end's diagnostics
           }).observe(document.getElementById('conversation'),
                      {childList: true, subtree: true, characterData: true})""",
        tokens,
    )
    _ask(page, QUESTION)
    turn = page.locator("#conversation .turn").first
    assert page.evaluate("seen => seen.length", tokens) >= 1  # text came before the end
    expect(turn.locator(".answer")).to_contain_text("every 6 hours")
    cite = turn.locator(".answer a.cite").first
    expect(cite).to_have_text(re.compile(r"^\[\d+\]$"))
    href = cite.get_attribute("href") or ""
    assert CHUNK_LINK.match(href), href
    first_source = turn.locator(".sources li").first
    expect(first_source).to_contain_text("ops.md")
    expect(first_source).to_contain_text("lines")
    expect(first_source).to_contain_text("score")
    cited = turn.locator(".sources a", has_text="ops.md").first.get_attribute("href")
    assert href in {cited} | {a.get_attribute("href") for a in turn.locator(".sources a").all()}, (
        href,
        cited,
    )
    diagnostics = turn.locator(".diag")
    expect(diagnostics.locator("dl")).not_to_be_visible()  # collapsed until asked
    diagnostics.locator("summary").click()
    for fact in ("hit type", "rag", "sources", "top source score", "confidence", "first token"):
        expect(diagnostics).to_contain_text(fact)
    # The extractive answer quotes its sources: verified, nothing flagged.
    expect(diagnostics).to_contain_text("verified · score 1")
    expect(turn.locator(".flagged")).to_be_hidden()
    screenshots(page, "ask-answer", ["#question", ".turn .answer a.cite", ".turn .sources"])
    cite.click()  # the passage it cites, in its document
    expect(page).to_have_url(re.compile(re.escape(href) + "$"))
    expect(page.locator("main")).to_contain_text("every 6 hours")


def test_a_follow_up_stays_in_the_same_session(page: Page, console: Console) -> None:
    _ask(page, QUESTION)
    session = page.input_value("#session-id")
    assert session.startswith("ui-")
    _ask(page, "And how long are they kept?")
    assert page.input_value("#session-id") == session
    expect(page.locator("#conversation .turn")).to_have_count(2)
    expect(page.locator("#conversation .turn").nth(1).locator(".answer")).to_contain_text("35")
    page.click("#new-conversation")
    assert page.input_value("#session-id") == ""
    expect(page.locator("#conversation .turn")).to_have_count(0)


def test_a_question_the_documents_do_not_answer_says_so(page: Page) -> None:
    _ask(page, "What colour is the quokka on the cafeteria mural?")
    turn = page.locator("#conversation .turn").first
    expect(turn.locator(".hit-type")).to_have_text("Not enough in the documents")
    turn.locator(".diag summary").click()
    expect(turn.locator(".diag")).to_contain_text("insufficient_context")


def test_an_faq_entry_answers_as_such(page: Page) -> None:
    _ask(page, FAQ)
    turn = page.locator("#conversation .turn").first
    expect(turn.locator(".hit-type")).to_have_text("FAQ answer")
    expect(turn.locator(".answer")).to_have_text("Use the self-service portal.")
    turn.locator(".diag summary").click()
    expect(turn.locator(".diag")).to_contain_text("faq_direct")


def test_a_question_that_cannot_be_asked_says_what_failed(page: Page) -> None:
    page.fill("#filters", "team")
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#stream-error")).to_contain_text("filter 'team' is not key=value")
    expect(page.locator(".turn .answer .bad")).to_contain_text("(400)")
    page.fill("#filters", "colour=blue")
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator("#stream-error")).to_contain_text("colour")
    expect(page.locator("#ask-button")).to_be_enabled()


def test_feedback_on_the_trace_page_is_stored_with_the_trace(page: Page, console: Console) -> None:
    _ask(page, QUESTION)
    page.goto(console.url("/ui/traces?kind=answer"))
    page.locator("a[href^='/ui/traces/']").first.click()
    trace_id = page.url.rsplit("/", 1)[1]
    form = page.locator("#feedback-form")
    form.locator("input[value=no]").check()
    form.locator("input[name=comment]").fill("сказано неверно, 备份")
    form.locator("button").click()
    expect(page).to_have_url(console.url(f"/ui/traces/{trace_id}?feedback=saved"))
    screenshots(page, "trace", ["#trace-facts", "#waterfall", "#feedback-form", "#save-case"])
    lines = (console.data / "feedback" / "feedback.jsonl").read_text(encoding="utf-8")
    stored = [json.loads(line) for line in lines.splitlines()]
    assert {
        "trace_id": trace_id,
        "helpful": False,
        "comment": "сказано неверно, 备份",
        "by": "full",
    }.items() <= stored[-1].items()
    by_script = page.evaluate(
        """async id => {
             const r = await fetch('/ui/traces/' + id + '/feedback', {method: 'POST',
               headers: {Accept: 'application/json'},
               body: new URLSearchParams({helpful: 'yes'})});
             return [r.status, await r.json()];
           }""",
        trace_id,
    )
    assert by_script == [200, {"saved": True, "trace_id": trace_id, "helpful": True}]
    assert len(console_lines(console)) == len(stored) + 1


def test_feedback_needs_an_answer_the_caller_may_read(
    context: BrowserContext, console: Console
) -> None:
    page = context.new_page()
    sign_in(page, console.server.url, FULL, "/ui/ask")
    page.goto(console.url("/ui/traces?kind=ingest"))
    links = page.locator("#traces a")
    ids = [(a.get_attribute("href") or "").rsplit("/", 1)[1] for a in links.all()]
    limited = context.browser.new_context()  # type: ignore[union-attr]
    other = limited.new_page()
    sign_in(other, console.server.url, LIMITED, "/ui/ask")
    post = """async id => {
                const r = await fetch('/ui/traces/' + id + '/feedback', {method: 'POST',
                  headers: {Accept: 'application/json'},
                  body: new URLSearchParams({helpful: 'no'})});
                return r.status;
              }"""
    statuses = {other.evaluate(post, trace_id) for trace_id in ids}
    limited.close()
    assert statuses == {400, 404}, statuses  # an ingest run of default; one of private
    assert page.evaluate(post, ids[0]) == 400


def console_lines(console: Console) -> list[str]:
    return (console.data / "feedback" / "feedback.jsonl").read_text(encoding="utf-8").splitlines()


def test_feedback_from_the_answer_is_stored_and_shown_on_its_trace(
    page: Page, console: Console
) -> None:
    _ask(page, QUESTION)
    turn = page.locator("#conversation .turn").first
    feedback = turn.locator(".feedback")
    expect(feedback).to_be_visible()
    feedback.locator("[data-helpful=no]").click()
    feedback.locator("textarea").fill("missed the retention")
    feedback.locator(".send").click()
    expect(feedback.locator(".feedback-status")).to_contain_text("saved")
    feedback.locator(".save-case").click()
    expect(page.locator("#feedback")).to_contain_text("missed the retention")
    expect(page.locator("#save-case")).to_be_visible()


def test_a_limited_token_picks_only_its_collections(
    context: BrowserContext, console: Console
) -> None:
    page = context.new_page()
    sign_in(page, console.server.url, LIMITED, "/ui/ask")
    options = page.locator("#collection option").all_inner_texts()
    assert options == ["default"], options
    refused = page.evaluate(
        """async () => {
             const r = await fetch('/ui/ask/stream', {method: 'POST',
               headers: {'Content-Type': 'application/json'},
               body: JSON.stringify({question: 'orchid merger', collection: 'private'})});
             return [r.status, await r.text()];
           }"""
    )
    assert refused[0] == 403, refused
    assert "may not read collection 'private'" in refused[1]
    assert "closes in spring" not in refused[1]  # nothing of the collection it may not read


def test_a_cross_site_post_to_the_stream_is_refused(
    page: Page, context: BrowserContext, console: Console
) -> None:
    cookies = {c["name"]: c["value"] for c in context.cookies()}
    body = {"question": QUESTION}
    for headers in ({"Origin": "http://evil.example"}, {}):
        posted = httpx.post(
            console.url("/ui/ask/stream"),
            json=body,
            cookies=cookies,
            headers=headers,
            timeout=WAIT_S,
        )
        assert posted.status_code == 403, posted.text  # the guard's origin list, or ours
        assert "origin" in posted.json()["error"].lower() and "event:" not in posted.text
    same = httpx.post(
        console.url("/ui/ask/stream"),
        json=body,
        cookies=cookies,
        headers={"Origin": console.url("")},
        timeout=WAIT_S,
    )
    assert same.status_code == 200 and "event: end" in same.text
    forged = httpx.post(
        console.url("/ui/traces/0123456789abcdef/feedback"),
        data={"helpful": "yes"},
        cookies=cookies,
        headers={"Origin": "http://evil.example", "Accept": "application/json"},
        timeout=WAIT_S,
    )
    assert forged.status_code == 403


def test_without_script_the_form_posts_and_the_answer_is_a_page(
    browser_without_script: Page, console: Console
) -> None:
    page = browser_without_script
    page.fill("#question", QUESTION)
    page.click("#ask-button")
    expect(page.locator(".turn .answer")).to_contain_text("every 6 hours")
    href = page.locator(".turn .answer a.cite").first.get_attribute("href") or ""
    assert CHUNK_LINK.match(href), href


@pytest.fixture
def browser_without_script(context: BrowserContext, console: Console) -> Iterator[Page]:
    opened = context.browser.new_context(java_script_enabled=False)  # type: ignore[union-attr]
    page = opened.new_page()
    sign_in(page, console.server.url, FULL, "/ui/ask")
    yield page
    opened.close()
