"""A crawl facing odd answers, against a real local HTTP server (tests/web_stub.py): a
robots.txt not answered changes nothing, a link or a redirect that is not a URL fails
alone, credentials stay on the crawl's own origin, a huge Crawl-delay is capped and its
wait stops with the ingests, two crawls of one site take turns, sitemaps are read up to a
cap, and ``/x`` and ``/x.html`` are two documents. Real SQLite files, hashing embedder."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, build_app
from knowhub.errors import CollectionNotFound, IngestError
from knowhub.ingest.remote import remote_source
from knowhub.ingest.report import IngestReport
from knowhub.ingest.sources import mirror_lock, mirror_root
from knowhub.ingest.web.crawl import CrawlOptions, crawl
from knowhub.ingest.web.source import WebSource
from tests.helpers import WAIT_S, fast_settings
from tests.web_stub import Answer, page, stub_site

LOOPBACK = {
    "ingest.web.allow_private_networks": ["127.0.0.0/8"],
    "ingest.web.requests_per_second": 200.0,
}
ALLOW_ALL = Answer(body=b"User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"})


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    application = build_app(fast_settings(tmp_path / "data", **LOOPBACK))
    yield application
    application.close()


def _site() -> dict[str, Answer]:
    return {
        "/robots.txt": ALLOW_ALL,
        "/docs/": page("Docs", "The index.", '<a href="a.html">a</a>'),
        "/docs/a.html": page("A", "The quokkaharbour page."),
    }


def _crawl(app: App, url: str, **options: object) -> IngestReport:
    source = remote_source(url, app.settings, options)
    assert source is not None
    return app.collection().ingest_source(source)


def _sources(app: App) -> set[str]:
    return {r.source for r in app.collection().documents()}


@pytest.mark.parametrize(
    "robots",
    [
        Answer(503, b"down for maintenance"),
        Answer(302, headers={"Location": "http://169.254.169.254/robots.txt"}),  # refused
        Answer(302, headers={"Location": "http://[::1"}),  # not a URL
    ],
    ids=["503", "refused-redirect", "bad-location"],
)
def test_a_robots_txt_not_answered_fails_the_crawl_and_changes_nothing(
    app: App, robots: Answer
) -> None:
    with stub_site(_site()) as site:
        first = _crawl(app, site.url("docs/"))
        assert site.url("docs/a.html") in first.added
        before = _sources(app)
        site.routes["/robots.txt"] = robots
        asked = len(site.requests)
        with pytest.raises(IngestError, match=r"robots\.txt.*nothing changed; try again later"):
            _crawl(app, site.url("docs/"))
        assert site.paths()[asked:] == ["/robots.txt"]  # no page asked for
    assert _sources(app) == before  # the site is still in the collection, whole


def test_a_first_crawl_of_a_site_whose_robots_txt_fails_fetches_nothing(app: App) -> None:
    with stub_site({**_site(), "/robots.txt": Answer(500)}) as site:
        with pytest.raises(IngestError, match=r"robots\.txt was not answered .*500"):
            _crawl(app, site.url("docs/"))
        assert site.paths() == ["/robots.txt"]
    with pytest.raises(CollectionNotFound):  # nothing was ingested
        app.collection().documents()


def test_a_link_or_redirect_that_is_not_a_url_fails_alone(app: App) -> None:
    links = '<a href="http://[oops/">x</a> <a href="bad.html">b</a> <a href="a.html">a</a>'
    routes = {
        **_site(),
        "/docs/": page("Docs", "The index.", links),
        "/docs/bad.html": Answer(302, headers={"Location": "http://[::1"}),
    }
    with stub_site(routes) as site:
        report = _crawl(app, site.url("docs/"))
    assert site.url("docs/a.html") in report.added
    assert "not a URL" in dict(report.failed)[site.url("docs/bad.html")]


def test_credentials_go_to_the_crawls_own_origin_only(tmp_path: Path) -> None:
    token = {"ingest.web.headers": {"127.0.0.1": {"X-Token": "s3cret-token"}}}
    settings = fast_settings(tmp_path / "data", **LOOPBACK, **token)
    with stub_site({}) as other, stub_site(_site()) as site:
        # The same host, another port: robots.txt names a sitemap there.
        other.routes["/sitemap.xml"] = Answer(body=b"<urlset></urlset>")
        robots = f"User-agent: *\nAllow: /\nSitemap: {other.url('sitemap.xml')}\n"
        site.routes["/robots.txt"] = Answer(body=robots.encode())
        crawl(site.url("docs/"), CrawlOptions(), settings.ingest.web, tmp_path / "m", [].append)
    sent = {path: headers.get("X-Token") for path, headers in site.requests}
    assert sent["/robots.txt"] == sent["/docs/"] == "s3cret-token"
    assert other.paths() == ["/sitemap.xml"]
    assert "X-Token" not in other.requests[0][1]


def test_a_huge_crawl_delay_is_capped_and_said(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data", **LOOPBACK).ingest.web
    notes: list[str] = []
    routes = {**_site(), "/robots.txt": Answer(body=b"User-agent: *\nCrawl-delay: 86400\n")}
    with stub_site(routes) as site:
        result = crawl(site.url("docs/"), CrawlOptions(depth=0), settings, tmp_path, notes.append)
    assert result.counts == {"fetched": 1}
    assert any("86400 s" in n and "60 s are waited" in n for n in notes), notes


# A process of its own: stop_ingests() stops every ingest of its process, for good.
_STOPPED_WAIT = """
import sys, threading, time
from knowhub.ingest.stopping import ShutdownRequestedError, stop_ingests
from knowhub.ingest.web.rate import RateLimit
rate = RateLimit(1000.0)
rate.at_least(60.0)
rate.wait()  # the first request: at once
raised = []
def second() -> None:
    try:
        rate.wait()  # 60 s from the first
    except ShutdownRequestedError:
        raised.append(time.monotonic())
waiter = threading.Thread(target=second)
waiter.start()
stop_ingests()
waiter.join()
print("stopped" if raised else "waited")
"""


def test_a_crawl_delay_wait_stops_when_ingests_stop() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _STOPPED_WAIT], capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"


def test_two_crawls_of_one_site_take_turns(app: App) -> None:
    with stub_site(_site()) as site:
        source = remote_source(site.url("docs/"), app.settings)
        assert isinstance(source, WebSource)
        root = mirror_root(app.settings, "web", source.key())
        with mirror_lock(root):  # another crawl of the site is writing its mirror
            other = threading.Thread(target=source.fetch, args=(app.settings,))
            other.start()
            other.join(timeout=2.0)  # long enough for a crawl not waiting to start
            assert site.requests == []
        other.join(timeout=WAIT_S)
        assert not other.is_alive()
        assert "/docs/a.html" in site.paths()


def test_sitemap_seeds_are_capped_and_said(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data", **LOOPBACK).ingest.web
    with stub_site(_site()) as site:
        urls = "".join(
            f"<url><loc>{site.url(f'docs/p{n}.html')}</loc></url>" for n in range(10_050)
        )
        site.routes["/sitemap.xml"] = Answer(body=f"<urlset>{urls}</urlset>".encode())
        notes: list[str] = []
        crawl(site.url("docs/"), CrawlOptions(max_pages=2), settings, tmp_path, notes.append)
    assert any("more than 10000 pages" in n for n in notes), notes


def test_a_page_and_the_same_path_with_an_extension_are_two_documents(app: App) -> None:
    routes = {
        **_site(),
        "/docs/": page("Docs", "The index.", '<a href="x">x</a> <a href="x.html">x.html</a>'),
        "/docs/x": page("X", "The wombatlantern page."),
        "/docs/x.html": page("X html", "The quokkaharbour page."),
    }
    with stub_site(routes) as site:
        _crawl(app, site.url("docs/"))
        assert {site.url("docs/x"), site.url("docs/x.html")} <= _sources(app)
        hit = app.collection().search("wombatlantern").hits[0]
        assert hit.source == site.url("docs/x")
