"""The web console (``/ui`` of ``knowhub serve http``) as people use it: a real server
process, a real headless Chromium driven by playwright, the same tokens as the API.

The browser is tests/console_helpers.py's: the system Chromium, never skipped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from knowhub import build_app
from tests.console_helpers import screenshots, sign_in
from tests.helpers import WAIT_S, fast_settings, knowhub, write
from tests.http_helpers import (
    FULL,
    HR,
    LIMITED,
    MINUTES,
    OPS,
    READER,
    TOKEN_ENV,
    ApiServer,
    api_server,
)

XSS_TITLE = "<script>alert('title')</script> Release notes"
QUESTION = "How often do database backups run?"


@dataclass
class Console:
    server: ApiServer
    root: Path
    data: Path

    def url(self, path: str) -> str:
        return self.server.url + path


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    root = tmp_path_factory.mktemp("console")
    write(root / "docs/ops.md", OPS)
    write(root / "docs/team/hr.md", HR)
    write(root / "docs/release.md", f"# {XSS_TITLE}\n\nThe release ships on Friday.\n")
    write(root / "docs/broken.pdf", "this is not a PDF")
    os.mkfifo(root / "docs/pipe.txt")  # skipped, with its reason, in /ui/ingestion
    write(root / "private/minutes.md", MINUTES)
    data = root / "data"
    app = build_app(fast_settings(data))
    try:  # each ingest is a trace of kind ingest, as from the CLI
        report = app.collection("default").ingest([root / "docs"])
        assert [source for source, _ in report.failed] == ["broken.pdf"], report.failed
        assert [source for source, _ in report.skipped] == ["pipe.txt"], report.skipped
        app.collection("private").ingest([root / "private"])
    finally:
        app.close()
    _eval_reports(root, data)
    with api_server(cwd=root, data_dir=data, env=TOKEN_ENV, token=FULL) as server:
        yield Console(server, root, data)


def _eval_reports(root: Path, data: Path) -> None:
    """One report from a real `knowhub eval`, one older written by hand, one broken."""
    seed = write(
        root / "seed.json",
        json.dumps(
            [
                {"query": "How long are backups kept?", "expected_sources": ["ops.md"]},
                {"query": "annual leave days", "expected_sources": ["team/hr.md"]},
            ]
        ),
    )
    result = knowhub(
        "--data-dir", str(data), "eval", str(seed), "--collection", "default", cwd=root
    )
    assert result.returncode == 0, result.stderr
    cases = [{"query": "How long are backups kept?", "expected_hit_type": "rag"}]
    answers = write(root / "seed-answers.json", json.dumps(cases))
    ask = ("--data-dir", str(data), "eval", "--answers", str(answers), "--collection", "default")
    result = knowhub(*ask, cwd=root)
    assert result.returncode == 0, result.stderr
    reports = data / "eval" / "reports"
    metrics = {"ndcg@10": 0.5, "recall@10": 0.6, "mrr@10": 0.4, "hit_rate@10": 0.67}
    old = {
        "name": "handbook",
        "split": None,
        "collection": "default",
        "queries": 3,
        "created": "2026-01-01T00:00:00+00:00",
        "metrics": metrics,
    }
    write(reports / "handbook" / "report.json", json.dumps(old))
    write(reports / "broken" / "report.json", "{")


@pytest.fixture
def page(context: BrowserContext, console: Console) -> Page:
    """A page signed in with the full token."""
    opened = context.new_page()
    _sign_in(opened, console, FULL)
    return opened


def _sign_in(page: Page, console: Console, token: str, path: str = "/ui") -> None:
    sign_in(page, console.server.url, token, path)


def _search(page: Page, console: Console, query: str) -> None:
    page.goto(console.url("/ui/search"))
    page.fill("input[name=q]", query)
    page.click("button:has-text('Search')")
    expect(page.locator("#hits")).to_be_visible()


# -- signing in ------------------------------------------------------------------------


def test_signing_in_shows_the_overview(context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    page.goto(console.url("/ui"))
    expect(page).to_have_url(console.url("/ui/login?next=%2Fui"))
    page.fill("input[name=token]", "wrong-token")
    page.click("button:has-text('Sign in')")
    expect(page.get_by_role("alert")).to_contain_text("wrong token")
    screenshots(page, "login", ["input[name=token]", "[role=alert]"])
    page.fill("input[name=token]", FULL)
    page.click("button:has-text('Sign in')")
    expect(page).to_have_url(console.url("/ui"))
    row = page.locator("#collections tr", has_text="default")
    expect(row).to_contain_text("3")  # documents: ops, hr, release (broken.pdf failed)
    expect(row).to_contain_text("hashing")
    expect(row).to_contain_text("complete")
    expect(page.locator("#health")).to_contain_text("uptime")
    expect(page.locator("#health")).to_contain_text("reranker")
    expect(page.locator("#recent")).to_contain_text("ingest")
    screenshots(page, "overview", ["#collections", "#health", "#recent"])
    (cookie,) = context.cookies()
    assert cookie["name"] == "knowhub_session" and cookie["httpOnly"] and cookie["path"] == "/ui"
    assert cookie["sameSite"] == "Strict"
    page.click("button:has-text('Sign out')")
    expect(page).to_have_url(console.url("/ui/login"))
    assert context.cookies() == []


def test_a_browser_without_a_token_sees_no_data(context: BrowserContext, console: Console) -> None:
    page = context.new_page()
    for path in ("/ui/documents", "/ui/traces?kind=search", "/ui/evals", "/ui/ingestion"):
        page.goto(console.url(path))
        assert page.url.startswith(console.url("/ui/login?next=")), page.url
        text = page.content()
        assert "ops.md" not in text and "minutes" not in text and "ndcg" not in text
    posted = page.request.post(
        console.url("/ui/traces/0123456789abcdef/save-case"), form={"expected": "ops.md"}
    )
    assert posted.status == 401
    assert not (console.data / "golden.json").exists()


def test_the_cookie_is_no_token_for_the_api(console: Console) -> None:
    signed_in = httpx.post(
        console.url("/ui/login"),
        data={"token": FULL},
        timeout=WAIT_S,
        headers={"Origin": console.url("")},
    )
    cookies = {"knowhub_session": signed_in.cookies["knowhub_session"]}
    assert httpx.get(console.url("/ui"), cookies=cookies, timeout=WAIT_S).status_code == 200
    api = httpx.get(console.url("/api/collections"), cookies=cookies, timeout=WAIT_S)
    assert api.status_code == 401


# -- pages -----------------------------------------------------------------------------


def test_search_shows_cited_hits_explained_with_stage_timings(page: Page, console: Console) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: dialogs.append(d.message))
    _search(page, console, QUESTION)
    first = page.locator("#hits li").first
    expect(first).to_contain_text("[1] ops.md, § Operations > Backups, lines")
    expect(first).to_contain_text("every 6 hours")
    expect(first.locator(".explain")).to_contain_text("lexical #1")
    expect(first.locator(".explain")).to_contain_text("fused")
    bars = page.locator("#stage-bars")
    for stage in ("lexical", "dense", "fusion"):
        expect(bars).to_contain_text(stage)
    assert page.locator("#stage-bars .bar").count() >= 3
    screenshots(page, "search", ["#hits li", "#stage-bars"])
    first.locator("a.mono").click()  # the chunk id
    expect(page.locator("h1")).to_contain_text("Chunk")
    expect(page.locator("main")).to_contain_text("every 6 hours")
    screenshots(page, "chunk", ["h1", "main"])
    _search(page, console, "release notes")  # a title holding markup: shown, never run
    expect(page.locator("#hits")).to_contain_text("<script>alert('title')</script>")
    assert dialogs == []


def test_a_trace_has_a_waterfall_and_becomes_a_regression_case(
    page: Page, console: Console
) -> None:
    query = "How long are the backups kept?"
    _search(page, console, query)
    page.goto(console.url("/ui/traces?kind=search"))
    screenshots(page, "traces", ["#traces"])
    page.locator("#traces tr", has_text=query).first.locator("a").click()
    expect(page.locator("h1")).to_contain_text("Search")
    waterfall = page.locator("#waterfall")
    for stage in ("lexical", "query_embedding", "dense", "fusion"):
        expect(waterfall).to_contain_text(stage)
    assert page.locator("#waterfall rect").count() >= 8  # a track and a bar per stage
    expect(page.locator("#cited")).to_contain_text("ops.md")
    page.fill("#save-case input[name=expected]", "ops.md")
    page.click("button:has-text('Save as regression case')")
    expect(page.locator("#saved")).to_contain_text("Added")
    golden = json.loads((console.data / "golden.json").read_text(encoding="utf-8"))
    assert {"query": query, "expected_sources": ["ops.md"]}.items() <= golden[-1].items()
    page.fill("#save-case input[name=expected]", "team/hr.md")  # same query: one entry more
    page.click("button:has-text('Save as regression case')")
    expect(page.locator("#saved")).to_contain_text("Updated")
    golden = json.loads((console.data / "golden.json").read_text(encoding="utf-8"))
    assert golden[-1]["expected_sources"] == ["ops.md", "team/hr.md"]


def test_the_document_browser_shows_metadata_and_chunks(page: Page, console: Console) -> None:
    page.goto(console.url("/ui/documents"))
    expect(page.locator("#documents")).to_contain_text("team/hr.md")
    page.click("#documents a:has-text('ops.md')")
    expect(page.locator("#document-facts")).to_contain_text("markdown")
    chunks = page.locator("#chunks section")
    assert chunks.count() >= 1
    expect(page.locator("#chunks")).to_contain_text("§ Operations > Backups")
    expect(page.locator("#chunks")).to_contain_text("lines")
    expect(page.locator("#chunks")).to_contain_text("kept for 35")
    screenshots(page, "document", ["#document-facts", "#chunks section"])
    page.goto(console.url("/ui/documents"))
    screenshots(page, "documents", ["#documents"])


def test_ingestion_lists_runs_with_failure_reasons(page: Page, console: Console) -> None:
    page.goto(console.url("/ui/ingestion"))
    runs = page.locator("#ingest-runs")
    expect(runs).to_contain_text("default")
    expect(runs).to_contain_text("private")
    expect(runs.locator("tr.failures")).to_contain_text("broken.pdf")
    expect(runs.locator("tr.failures")).to_contain_text("skipped pipe.txt: is a FIFO")
    screenshots(page, "ingestion", ["#ingest-runs"])


def test_evals_chart_metrics_across_runs(page: Page, console: Console) -> None:
    page.goto(console.url("/ui/evals"))
    rows = page.locator("#eval-runs tr")
    expect(rows).to_have_count(3)  # header, handbook (older), seed
    expect(rows.nth(1)).to_contain_text("handbook")
    expect(rows.nth(2)).to_contain_text("seed")
    chart = page.locator("#eval-chart")
    expect(chart).to_contain_text("ndcg@10")
    assert page.locator("#eval-chart svg.metric").count() >= 4
    assert page.locator("#eval-chart svg.metric").first.locator("rect").count() == 4  # 2 runs
    expect(page.locator(".error")).to_contain_text("not valid JSON")  # the broken report
    # Answer runs beside them, each kind with its own metrics.
    answers = page.locator("#answer-runs tr")
    expect(answers).to_have_count(2)  # header, seed-answers
    expect(answers.nth(1)).to_contain_text("seed-answers-answers")
    expect(answers.nth(0)).to_contain_text("hit_type_accuracy")
    expect(answers.nth(0)).to_contain_text("faithfulness")
    expect(page.locator("#answer-chart")).to_contain_text("faithfulness")
    expect(page.locator("#eval-chart")).not_to_contain_text("faithfulness")
    screenshots(page, "evals", ["#eval-runs", "#eval-chart", "#answer-runs"])


def test_a_limited_token_sees_only_its_collections(
    context: BrowserContext, console: Console
) -> None:
    page = context.new_page()
    _sign_in(page, console, LIMITED)
    expect(page.locator("#collections")).to_contain_text("default")
    expect(page.locator("#collections")).not_to_contain_text("private")
    page.goto(console.url("/ui/ingestion"))
    expect(page.locator("#ingest-runs")).not_to_contain_text("private")
    response = page.goto(console.url("/ui/documents?collection=private"))
    assert response is not None and response.status == 403
    expect(page.get_by_role("alert")).to_contain_text("may not read collection 'private'")


# -- plain HTTP: escaping, forged posts ------------------------------------------------


def test_markup_from_documents_and_queries_is_escaped(console: Console) -> None:
    server = console.server
    listing = server.get("/ui/documents")
    assert listing.status_code == 200
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt; Release notes" in listing.text
    query = "<script>alert(1)</script> release"
    found = server.get("/ui/search", params={"q": query})
    assert found.status_code == 200
    # Only the console's own scripts load, and never inline ones: the query is text.
    tags = re.findall(r"<script[^>]*>", found.text, flags=re.IGNORECASE)
    assert all(re.search(r'src="/ui/static/[\w.-]+"', tag) for tag in tags), tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt; release" in found.text
    csp = dict(d.strip().split(" ", 1) for d in found.headers["content-security-policy"].split(";"))
    assert csp["default-src"] == "'none'" and csp["script-src"] == "'self'"
    assert found.headers["x-content-type-options"] == "nosniff"


def test_console_posts_from_other_pages_are_refused(console: Console) -> None:
    server = console.server
    server.get("/ui/search", params={"q": "annual leave"})
    traces = server.get("/ui/traces", params={"kind": "search"}).text
    trace_id = traces.split('href="/ui/traces/', 1)[1].split('"', 1)[0]
    path = f"/ui/traces/{trace_id}/save-case"
    form = {"expected": "team/hr.md"}
    golden = console.data / "golden.json"
    before = golden.read_text(encoding="utf-8") if golden.exists() else None
    foreign = server.post(path, data=form, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "allowed_origins" in foreign.text
    # Allowed for API calls from local web apps, but not this server: not a console page.
    neighbour = server.post(path, data=form, headers={"Origin": "http://localhost:5173"})
    assert neighbour.status_code == 403 and "only accepted from the console" in neighbour.text
    assert server.post(path, data=form).status_code == 403  # no Origin: not from a browser
    own = {"Origin": server.url}
    assert server.post(path, data=form, headers=own, token=READER).status_code == 403
    empty = server.post(path, data={"expected": " "}, headers=own)
    assert empty.status_code == 400 and "expected source is empty" in empty.text
    assert 'id="save-case"' in empty.text  # the trace page again, to correct the form
    assert (golden.read_text(encoding="utf-8") if golden.exists() else None) == before
    saved = server.post(path, data=form, headers=own, follow_redirects=False)
    assert saved.status_code == 303 and "saved=" in saved.headers["location"]
    login = server.post(
        "/ui/login", data={"token": FULL}, headers={"Origin": "http://localhost:5173"}
    )
    assert login.status_code == 403 and "set-cookie" not in login.headers


def test_without_tokens_the_console_is_open(tmp_path: Path) -> None:
    write(tmp_path / "docs/ops.md", OPS)
    data = tmp_path / "data"
    assert (
        knowhub("--data-dir", str(data), "ingest", str(tmp_path / "docs"), cwd=tmp_path).returncode
        == 0
    )
    with api_server(
        "--host", "0.0.0.0", "--allow-unauthenticated", cwd=tmp_path, data_dir=data
    ) as server:
        overview = server.get("/ui")
        assert overview.status_code == 200 and "ops.md" not in overview.text
        assert ">default</a>" in overview.text
        assert "console is open" in server.get("/ui/login").text
        assert "ops.md" in server.get("/ui/documents").text


def test_the_consoles_own_files_are_served_and_nothing_else(console: Console) -> None:
    css = console.server.get("/ui/static/console.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    for name in ("routes.py", "..%2Froutes.py", ".hidden.css", "nothing.js"):
        assert console.server.get(f"/ui/static/{name}").status_code == 404, name
    assert console.server.get("/ui/static/console.css", token="").status_code in (303, 401)
