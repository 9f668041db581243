"""A website crawled into a collection, against a real nginx on 127.0.0.1 serving a copy of
python3-doc's tutorial: robots.txt obeyed, pages cited by URL and section anchor, a re-run
answered 304 and re-embedding nothing, a page gone pruned, redirects to private addresses
refused before any connection; a URL reaches the index only through a handle that may write
there (the MCP ingest tool, a read-only caller refused before any request). Real SQLite
files, hashing embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from knowhub import App, build_app
from knowhub.caller import Caller
from knowhub.errors import AuthError, KnowhubError
from knowhub.ingest.remote import remote_source
from knowhub.ingest.web.client import WebClient
from knowhub.ingest.web.policy import WebRefusedError
from knowhub.models import citation
from tests.helpers import fast_settings
from tests.integration.test_mcp_memory import fails, local, ok
from tests.web_site import Site, nginx_site

START = "docs/tutorial/"


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with nginx_site(tmp_path) as served:
        yield served


@pytest.fixture
def web_app(tmp_path: Path) -> Iterator[App]:
    settings = fast_settings(
        tmp_path / "data",
        **{
            # The test server is on 127.0.0.1: loopback only, never the other private ranges.
            "ingest.web.allow_private_networks": ["127.0.0.0/8"],
            "ingest.web.max_page_bytes": 400_000,
            "ingest.web.requests_per_second": 200.0,
        },
    )
    application = build_app(settings)
    yield application
    application.close()


def _crawl(app: App, site: Site, **options: object):  # type: ignore[no-untyped-def]
    source = remote_source(site.url(START), app.settings, options)
    assert source is not None
    return app.collection().ingest_source(source)


def test_a_crawl_indexes_the_allowed_pages_and_cites_urls_with_anchors(
    web_app: App, site: Site
) -> None:
    report = _crawl(web_app, site)
    sources = {r.source for r in web_app.collection().documents()}
    assert site.url(START + "controlflow.html") in sources
    assert site.url(START + "interpreter.html") in sources  # linked, and in the sitemap
    assert site.url(START + "notes.md") in sources  # Markdown by its content type
    assert not any("secret" in s for s in sources)  # robots.txt disallows private/
    secret = site.url(START + "private/secret.html")
    assert (secret, f"{secret}: disallowed by robots.txt") in report.skipped
    assert ("/docs/tutorial/private/secret.html", 200) not in site.access_statuses()
    # The start page and index.html are one page: kept once.
    assert (
        len([s for s in sources if s.startswith(site.url(START + "index"))])
        + len([s for s in sources if s == site.url(START)])
        == 1
    )
    phrase = "differs a bit from what you may be used to in C or Pascal"
    hits = web_app.collection().search(phrase).hits
    hit = next(h for h in hits if phrase in " ".join(h.text.split()))
    assert hit.url == site.url(START + "controlflow.html#for-statements")
    assert f"{hit.url}, § " in citation(hit)
    notes = web_app.collection().search("axolotlferry noon").hits[0]
    assert notes.source == site.url(START + "notes.md")


def test_a_page_larger_than_the_limit_fails_alone(web_app: App, site: Site) -> None:
    report = _crawl(web_app, site)
    failed = dict(report.failed)
    assert "ingest.web.max_page_bytes" in failed[site.url(START + "big.html")]
    assert site.url(START + "appetite.html") in report.added


def test_a_second_crawl_gets_304s_and_reembeds_nothing_and_a_gone_page_is_pruned(
    web_app: App, site: Site
) -> None:
    first = _crawl(web_app, site)
    assert first.embedded > 0
    logged = len(site.access_statuses())
    again = _crawl(web_app, site)
    assert again.embedded == 0
    assert not again.added and not again.updated
    assert again.fetched["not_modified"] >= 5
    second_run = site.access_statuses()[logged:]
    assert ("/docs/tutorial/controlflow.html", 304) in second_run
    assert ("/docs/tutorial/appetite.html", 200) not in second_run
    (site.root / START / "appetite.html").unlink()
    third = _crawl(web_app, site)
    assert third.removed == [site.url(START + "appetite.html")]
    assert site.url(START + "appetite.html") not in {
        r.source for r in web_app.collection().documents()
    }


def test_redirects_to_private_addresses_are_refused_before_connecting(
    web_app: App, site: Site
) -> None:
    report = _crawl(web_app, site)
    failed = dict(report.failed)
    assert "169.254.169.254 is a link-local address" in failed[site.url(START + "metadata.html")]
    assert "10.0.0.1 is a private address" in failed[site.url(START + "intranet.html")]
    with WebClient(web_app.settings.ingest.web) as client:
        for page in ("metadata.html", "intranet.html"):
            with pytest.raises(WebRefusedError, match="allow_private_networks"):
                client.get(site.url(START + page))
        hopped = client.get(site.url(START + "hop.html"))  # a redirect that stays is followed
    assert hopped.url == site.url(START + "controlflow.html") and hopped.status == 200
    # Only the test server was connected to: the refused addresses never were.
    assert set(client.connected) == {f"127.0.0.1:{site.port}"}


def test_a_hosts_credentials_are_not_sent_to_another_host_after_a_redirect(
    tmp_path: Path, site: Site
) -> None:
    settings = fast_settings(
        tmp_path / "data2",
        **{
            "ingest.web.allow_private_networks": ["127.0.0.0/8"],
            "ingest.web.headers": {"127.0.0.1": {"X-Token": "s3cret-token"}},
        },
    )
    with WebClient(settings.ingest.web, origin=site.url(START)) as client:
        reply = client.get(site.url(START + "away.html"))
    assert reply.status == 200 and reply.url.startswith("http://127.0.0.2:")
    sent = [(host, token) for _, _, _, host, token in site.access_log()]
    assert sent == [("127.0.0.1", "s3cret-token"), ("127.0.0.2", "-")]
    assert "s3cret-token" in settings.secret_values()  # scrubbed from traces


LOOPBACK = {"ingest.web.allow_private_networks": ["127.0.0.0/8"]}


@pytest.mark.anyio
async def test_the_mcp_ingest_tool_crawls_a_url(tmp_path: Path, site: Site) -> None:
    async with local(tmp_path, **LOOPBACK) as client:
        url = site.url("docs/tutorial/controlflow.html")
        report, text = await ok(client, "ingest", path=url, collection="web")
        assert url in report["added"]
        assert report["fetched"]["fetched"] >= 1 and "\npages: " in text
        found, _ = await ok(
            client, "query_knowledge_hub", query="differs a bit from C or Pascal", collection="web"
        )
        assert any(h["url"].startswith(url + "#") for h in found["hits"])
        refused = await fails(client, "ingest", path="http://good@10.0.0.1/", collection="web")
    assert "ingest.web.headers" in refused


@pytest.mark.parametrize(
    "caller",
    [
        Caller("reader", read_only=True),
        Caller("kb-only", collections=frozenset({"kb"})),
    ],
)
def test_a_caller_that_may_not_write_there_is_refused_before_any_request(
    web_app: App, site: Site, caller: Caller
) -> None:
    source = remote_source(site.url("docs/tutorial/"), web_app.settings)
    assert source is not None
    with pytest.raises((AuthError, KnowhubError)) as refused:
        web_app.for_caller(caller).collection("private").ingest_source(source)
    assert "may not" in str(refused.value)  # said as for any collection, existing or not
    assert not (site.logs / "access.log").read_text().strip()  # nothing was asked of the site


def test_a_page_the_server_fails_to_serve_for_now_is_kept(web_app: App, site: Site) -> None:
    page = site.url(START + "interpreter.html")
    assert page in _crawl(web_app, site).added
    (site.root.parent / "down").write_text("")  # the server answers 503 for it now
    again = _crawl(web_app, site)
    assert "the server answered 503; kept" in dict(again.failed)[page]
    assert page not in again.removed
    assert page in {r.source for r in web_app.collection().documents()}


def test_depth_and_max_pages_bound_the_crawl(web_app: App, site: Site) -> None:
    one = _crawl(web_app, site, depth=0)
    assert one.fetched["fetched"] == 1  # the start page alone
    logged = len(site.access_statuses())
    _crawl(web_app, site, max_pages=3, exclude=["*/appetite.html"])
    asked = [p for p, _ in site.access_statuses()[logged:] if p.endswith((".html", ".md"))]
    assert len(asked) == 3  # the start page (nginx logs it as index.html) and two more
    assert "/docs/tutorial/appetite.html" not in asked


def test_https_connects_to_the_checked_address_and_verifies_the_name(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path / "data", **LOOPBACK).ingest.web
    with nginx_site(tmp_path, traps=False, tls=True) as site:
        assert site.certificates is not None
        trusted = site.certificates.context()
        with WebClient(settings, verify=trusted) as client:
            page = f"https://localhost:{site.tls_port}/docs/tutorial/appetite.html"
            reply = client.get(page)
            assert reply.status == 200 and b"Whetting Your Appetite" in reply.body
            # The certificate names localhost only: asked by address, TLS refuses it.
            with pytest.raises(httpx2.ConnectError, match="certificate"):
                client.get(f"https://127.0.0.1:{site.tls_port}/docs/tutorial/appetite.html")
        assert client.connected == [f"127.0.0.1:{site.tls_port}"] * 2
