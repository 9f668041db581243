"""The crawl's pieces that need no server: mirror names, sitemaps, llms.txt, links,
robots.txt's answers, the manifest, and the HTML loader's heading anchors."""

from __future__ import annotations

from pathlib import Path

from knowhub.ingest.loaders import load
from knowhub.ingest.web.discovery import llms_links, page_links, read_robots, sitemap_urls
from knowhub.ingest.web.mirror import Manifest, PageEntry, file_extension, mirror_name
from tests.helpers import write


def test_a_page_is_mirrored_under_a_name_with_its_content_types_extension() -> None:
    assert file_extension("text/html; charset=utf-8", "https://x.org/a") == ".html"
    assert file_extension("text/plain", "https://x.org/guide.md") == ".md"
    assert file_extension("text/plain", "https://x.org/notes") == ".txt"
    assert file_extension("application/pdf", "https://x.org/paper") == ".pdf"
    assert file_extension("image/png", "https://x.org/logo.png") is None
    assert mirror_name("https://x.org/guide/setup.html", ".html") == "x.org/guide/setup.html"
    folder = mirror_name("https://x.org/guide/", ".html")
    assert folder.startswith("x.org/guide/index~") and folder.endswith(".html")
    bare = mirror_name("https://x.org/guide/setup", ".html")
    assert bare.startswith("x.org/guide/setup~") and bare.endswith(".html")
    queried = mirror_name("https://x.org/page?id=1", ".html")
    assert queried.startswith("x.org/page~") and queried != mirror_name(
        "https://x.org/page?id=2", ".html"
    )


def test_two_urls_never_share_a_mirror_file() -> None:
    urls = [
        "https://x.org/d/x",
        "https://x.org/d/x.html",
        "https://x.org/d/x?q=1",
        "https://x.org/d/x.html?q=1",
        "https://x.org/d/",
        "https://x.org/d/index.html",
        "https://x.org/d",
        "https://x.org/d.html",
    ]
    assert len({mirror_name(url, ".html") for url in urls}) == len(urls)
    unsafe = mirror_name("https://x.org/../a b/..%2f/", ".html")
    assert ".." not in unsafe.split("/") and " " not in unsafe


def test_sitemap_index_files_are_followed_and_bounded() -> None:
    ns = b'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    nested = b"<sitemap><loc>https://x.org/a.xml</loc></sitemap>"
    index = b"<sitemapindex " + ns + b">" + nested * 2 + b"</sitemapindex>"
    pages = (
        b"<urlset " + ns + b"><url><loc> https://x.org/p1 </loc></url>"
        b"<url><loc>https://x.org/p2</loc></url></urlset>"
    )
    files = {"https://x.org/sitemap.xml": index, "https://x.org/a.xml": pages}
    read: list[str] = []

    def fetch(url: str) -> bytes | None:
        read.append(url)
        return files.get(url)

    assert list(sitemap_urls(["https://x.org/sitemap.xml", "https://x.org/none.xml"], fetch)) == [
        "https://x.org/p1",
        "https://x.org/p2",
    ]
    assert read.count("https://x.org/a.xml") == 1
    assert list(sitemap_urls(["https://x.org/bad"], lambda _u: b"<not xml")) == []


def test_a_sitemap_file_is_read_up_to_the_protocols_50000_urls() -> None:
    urls = b"".join(b"<url><loc>https://x.org/p%d</loc></url>" % n for n in range(50_010))
    found = list(
        sitemap_urls(["https://x.org/s.xml"], lambda _u: b"<urlset>" + urls + b"</urlset>")
    )
    assert len(found) == 50_000 and found[-1] == "https://x.org/p49999"
    broken = b"<urlset><url><loc>http://[oops/</loc></url><url><loc>https://x.org/ok</loc></url>"
    assert list(sitemap_urls(["https://x.org/s.xml"], lambda _u: broken + b"</urlset>")) == [
        "https://x.org/ok"
    ]


def test_llms_txt_links_are_seeds() -> None:
    text = '# Project\n\n- [Guide](/docs/guide.md): the guide\n- [API](https://x.org/api/ "API")\n'
    assert llms_links(text, "https://x.org/llms.txt") == [
        "https://x.org/docs/guide.md",
        "https://x.org/api/",
    ]


def test_a_pages_links_and_canonical_url_are_normalized() -> None:
    html = b"""<html><head><link rel="canonical" href="/guide/#top"></head><body>
    <a href="setup.html#step">s</a> <a href="#local">l</a> <a href="mailto:a@x.org">m</a>
    <a rel="nofollow" href="/login">n</a></body></html>"""
    links, canonical = page_links(html, "https://x.org/guide/index.html")
    assert links == ["https://x.org/guide/setup.html"]
    assert canonical == "https://x.org/guide/"
    broken = b'<a href="http://[oops/">x</a> <a href="ok.html">ok</a> [x](http://[oops/)'
    assert page_links(broken, "https://x.org/")[0] == ["https://x.org/ok.html"]
    assert llms_links(broken.decode(), "https://x.org/llms.txt") == []


def test_robots_txt_answers_follow_rfc_9309() -> None:
    assert read_robots(None, 404).can_fetch("knowhub", "https://x.org/a")
    assert not read_robots(None, 503).can_fetch("knowhub", "https://x.org/a")
    rules = read_robots("User-agent: knowhub\nDisallow: /private/\nCrawl-delay: 2\n", 200)
    assert not rules.can_fetch("knowhub", "https://x.org/private/a")
    assert rules.can_fetch("knowhub", "https://x.org/public/a")
    assert rules.crawl_delay("knowhub") == 2


def test_the_manifest_is_written_whole_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    manifest = Manifest(
        {"https://x.org/": PageEntry("x.org/index.html", "https://x.org/", '"e1"', "", "ab", 0)},
        5.0,
    )
    manifest.write(path)
    again = Manifest.read(path)
    assert again == manifest
    assert again.pages["https://x.org/"].conditional() == {"If-None-Match": '"e1"'}
    assert again.sources() == {"x.org/index.html": "https://x.org/"}
    path.write_text("{not json")
    assert Manifest.read(path) == Manifest()
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]  # no temporary left


def test_html_headings_keep_their_anchors(tmp_path: Path) -> None:
    page = write(
        tmp_path / "page.html",
        """<html><body><h1 id="top">Guide</h1><p>Intro.</p>
        <section id="install"><h2>Install<a class="headerlink" href="#install">¶</a></h2>
        <p>Run it.</p></section>
        <h2><a name="use"></a>Use</h2><p>Use it.</p>
        <h2>Plain</h2><p>No anchor.</p>
        <div><p>text first</p><h3>Late</h3></div></body></html>""",
    )
    doc = load(page)
    assert [(h.title, h.anchor) for h in doc.headings] == [
        ("Guide", "top"),
        ("Install¶", "install"),
        ("Use", "use"),
        ("Plain", ""),
        ("Late", ""),
    ]
