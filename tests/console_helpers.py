"""A real headless Chromium for the web console's tests, driven by playwright.

The browser is the system Chromium (``make test`` installs Debian's; ``KNOWHUB_CHROMIUM``
points elsewhere). Without it the tests fail and say so: they are never skipped. The
fixtures reach every end-to-end test through tests/e2e/conftest.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.helpers import WAIT_S

__all__ = ["CHROMIUM_ARGS", "WAIT_MS", "browser", "chromium", "context", "screenshots", "sign_in"]

# Playwright's bounds (5 s for an expect, 30 s for an action) in its milliseconds: the
# suite's one generous bound, for every page, action and expect.
WAIT_MS = int(WAIT_S * 1000)

# Flags that keep Chromium off the network: its background services would otherwise try to
# connect out (refused on a closed machine) and slow every start.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    path = os.environ.get("KNOWHUB_CHROMIUM", "/usr/bin/chromium")
    if not Path(path).is_file():
        pytest.fail(
            f"no Chromium at {path}: run `make test` (it installs Debian's chromium), or set "
            "KNOWHUB_CHROMIUM to a Chromium binary"
        )
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium()
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    opened = browser.new_context()
    opened.set_default_timeout(WAIT_MS)
    yield opened
    opened.close()


def sign_in(page: Page, base_url: str, token: str, path: str = "/ui") -> None:
    """Open ``path`` (sent to the sign-in form first), sign in with ``token``, land there."""
    page.goto(base_url + path)
    expect(page).to_have_url(base_url + "/ui/login?next=" + path.replace("/", "%2F"))
    page.fill("input[name=token]", token)
    page.click("button:has-text('Sign in')")
    expect(page).to_have_url(base_url + path)
    # The URL changes when the landing page's navigation commits, before its deferred
    # scripts run: a click then would post the form without them (the no-JS path).
    page.wait_for_load_state("load")


def open_ask(context: BrowserContext, base_url: str, token: str) -> Page:
    """A new page signed in with ``token`` on Ask, ready to stream: asked before ask.js ran,
    a question would post the form without it (CI saw it once under load) and the answer
    would come back as a page, without data-done."""
    page = context.new_page()
    sign_in(page, base_url, token, "/ui/ask")
    expect(page.locator("#ask-form")).to_have_attribute("data-ready", "1")
    return page


def screenshots(page: Page, name: str, visible: list[str]) -> None:
    """``name`` at a desktop's and a phone's width, written for people to look at (to
    ``$KNOWHUB_SCREENSHOTS``, default .cache/screenshots/), each width with ``visible`` in
    view and nothing wider than the screen."""
    folder = Path(os.environ.get("KNOWHUB_SCREENSHOTS", ".cache/screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        for selector in visible:
            expect(page.locator(selector).first).to_be_visible()
        overflow = page.evaluate("document.documentElement.scrollWidth - innerWidth")
        assert overflow <= 1, (
            f"{name} is {overflow} px wider than a {width} px screen: {_too_wide(page)}"
        )
        shot = folder / f"{name}-{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 1000


def _too_wide(page: Page) -> list[str]:
    """The elements whose content spills past their box (innermost last), outside boxes
    that scroll sideways: what makes the page wider than the screen."""
    return list(
        page.evaluate(
            """() => {
               const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
               const inScroller = e => {
                 for (let a = e.parentElement; a; a = a.parentElement) if (scrolls(a)) return true;
                 return false;
               };
               return Array.from(document.querySelectorAll('body *'))
                 .filter(e => e.scrollWidth > e.clientWidth + 1 && !scrolls(e) && !inScroller(e))
                 .slice(-5)
                 .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
                           + (e.getAttribute('class') ? '.' + e.getAttribute('class') : '')
                           + ' ' + JSON.stringify((e.textContent || '').trim().slice(0, 50)));
             }"""
        )
    )
