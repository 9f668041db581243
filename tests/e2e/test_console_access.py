"""The console for people who use a keyboard or see less contrast, in a real Chromium: every
page's text reads at WCAG AA contrast (4.5:1, 3:1 for large text) against what is really
behind it, and Ask works from the keyboard alone with a visible focus at each step."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.console_helpers import open_ask
from tests.http_helpers import FULL, TOKEN_ENV, ApiServer, api_server, build_corpus

PAGES = [
    "/ui/ask",
    "/ui/search?q=database+backups&collection=default",
    "/ui/documents",
    "/ui/upload",
    "/ui/faq",
    "/ui",
    "/ui/ingestion",
    "/ui/versions",
    "/ui/traces",
    "/ui/evals",
    "/ui/source/0000000000000000_0000_00000000",  # the error page: a chunk that is not there
]
# Each element with text of its own: its colour, its size and weight, and the first opaque
# background behind it (its own or an ancestor's), as the WCAG contrast ratio sees them.
CONTRAST = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map(v => {
      v /= 255;
      return v <= .03928 ? v / 12.92 : ((v + .055) / 1.055) ** 2.4;
    });
    return .2126 * c[0] + .7152 * c[1] + .0722 * c[2];
  };
  const behind = e => {
    for (let a = e; a; a = a.parentElement) {
      const bg = rgb(getComputedStyle(a).backgroundColor);
      if (bg.length === 3 || bg[3] === 1) return bg.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const e of document.querySelectorAll('body *')) {
    const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    const style = getComputedStyle(e);
    if (!own || !e.getClientRects().length || style.visibility === 'hidden') continue;
    // Faded text (a colour's alpha, an ancestor's opacity) is seen mixed with its ground.
    const bg = behind(e), fg = rgb(style.color);
    let alpha = fg.length > 3 ? fg[3] : 1;
    for (let a = e; a; a = a.parentElement) alpha *= parseFloat(getComputedStyle(a).opacity);
    const seen = [0, 1, 2].map(i => alpha * fg[i] + (1 - alpha) * bg[i]);
    const [a, b] = [lum(seen), lum(bg)];
    const ratio = (Math.max(a, b) + .05) / (Math.min(a, b) + .05);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight) >= 700;
    const needed = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < needed)
      low.push(e.tagName.toLowerCase() + '.' + e.className
               + ' "' + e.textContent.trim().slice(0, 30) + '" '
               + ratio.toFixed(2) + ' < ' + needed);
  }
  return low;
}"""


@dataclass
class Site:
    server: ApiServer

    def url(self, path: str) -> str:
        return self.server.url + path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("access")
    data = build_corpus(root)
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield Site(server)


@pytest.fixture
def page(context: BrowserContext, site: Site) -> Page:
    return open_ask(context, site.server.url, FULL)


def test_every_pages_text_has_enough_contrast(page: Page, site: Site) -> None:
    page.fill("#question", "How often do database backups run?")
    page.click("#ask-button")
    expect(page.locator(".turn .answer")).to_have_attribute("data-done", "1")
    page.locator(".turn .diag summary").click()
    low = {"/ui/ask (answered)": page.evaluate(CONTRAST)}
    page.locator(".turn .answer a.cite").first.click()
    expect(page.locator("#passage mark").first).to_be_visible()
    low["/ui/source"] = page.evaluate(CONTRAST)
    for path in PAGES:
        page.goto(site.url(path))
        low[path] = page.evaluate(CONTRAST)
    page.click("button:has-text('Sign out')")
    low["/ui/login"] = page.evaluate(CONTRAST)
    assert {path: found for path, found in low.items() if found} == {}


def _tab_until(page: Page, key: str, target: str) -> tuple[list[str], list[str]]:
    """Press ``key`` until the element ``target`` (an id or a text) has the focus: the
    stops on the way, and those that showed no focus ring."""
    reached, unmarked = [], []
    for _ in range(40):
        page.keyboard.press(key)
        name, ringed = page.evaluate(
            """() => { const e = document.activeElement, s = getComputedStyle(e);
                       return [e.id || e.textContent.trim().slice(0, 20),
                               s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2]; }"""
        )
        reached.append(name)
        if not ringed:
            unmarked.append(name)
        if name == target:
            return reached, unmarked
    raise AssertionError(f"{key} never reached {target!r}: {reached}")


def test_ask_from_the_keyboard_alone(page: Page) -> None:
    question = page.locator("#question")
    expect(question).to_be_focused()  # the page opens ready to type
    back, unmarked_back = _tab_until(page, "Shift+Tab", "Skip to content")
    assert {"Ask", "Search", "Documents", "Upload", "Versions", "Sign out"} <= set(back), back
    box = page.locator("a.skip").bounding_box()
    assert box is not None and box["x"] >= 0  # shown on screen while it has the focus
    question.focus()
    ahead, unmarked_ahead = _tab_until(page, "Tab", "filters")
    assert ahead[:2] == ["ask-button", "collection"], ahead
    assert unmarked_back + unmarked_ahead == []
    question.focus()
    page.keyboard.type("How often do database backups run?")
    page.keyboard.press("Control+Enter")
    answer = page.locator(".turn .answer")
    expect(answer).to_have_attribute("data-done", "1")
    expect(answer).to_contain_text("every 6 hours")
    expect(question).to_be_focused()  # ready for the follow-up
