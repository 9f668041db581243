"""What a site says of its pages: robots.txt's rules and sitemaps, sitemap.xml (and
sitemap index files), llms.txt's links, and a page's links and canonical URL."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from urllib.robotparser import RobotFileParser

from knowhub.ingest.web.policy import normalized_url

__all__ = ["PageLinks", "llms_links", "page_links", "read_robots", "sitemap_urls"]

MAX_SITEMAPS = 50  # sitemap files read per crawl (an index may name thousands)
MAX_SITEMAP_URLS = 50_000  # the sitemap protocol's own limit per file
_NOT_PAGES = ("#", "mailto:", "javascript:", "tel:", "data:")
_MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def read_robots(text: str | None, status: int) -> RobotFileParser:
    """robots.txt's rules (RFC 9309): a 4xx answer allows everything, a server error (or no
    answer) disallows everything until it answers."""
    robots = RobotFileParser()
    if text is not None and status == 200:
        robots.parse(text.splitlines())
    elif 400 <= status < 500:
        robots.parse([])
    else:
        robots.parse(["User-agent: *", "Disallow: /"])
    return robots


def sitemap_urls(first: list[str], read: Callable[[str], bytes | None]) -> Iterator[str]:
    """Page URLs listed by the sitemaps ``first`` names, normalized (one that is not a URL
    left out), sitemap index files followed (at most :data:`MAX_SITEMAPS` files,
    :data:`MAX_SITEMAP_URLS` URLs each); ``read`` gives a sitemap's bytes, or None when
    it could not be read."""
    queue, seen = list(first), set(first)
    read_count = 0
    while queue and read_count < MAX_SITEMAPS:
        data = read(queue.pop(0))
        read_count += 1
        if data is None:
            continue
        try:
            root = ET.fromstring(data)
        except ET.ParseError:
            continue
        nested = root.tag.endswith("sitemapindex")
        locations = (node.text for node in root.iter() if node.tag.endswith("loc") and node.text)
        for count, text in enumerate(locations):
            url = _absolute(text)
            if count >= MAX_SITEMAP_URLS:
                break
            if url is None or (nested and url in seen):
                continue
            if not nested:
                yield url
            else:
                seen.add(url)
                queue.append(url)


def llms_links(text: str, base: str) -> list[str]:
    """The links of an llms.txt file (Markdown), absolute."""
    links = (_absolute(m[1], base) for m in _MARKDOWN_LINK.finditer(text))
    return [link for link in links if link is not None]


def _absolute(href: str, base: str | None = None) -> str | None:
    """``href`` normalized, or None when it is not a URL (``http://[oops/``): a link a
    crawl leaves, where raising would end the whole crawl."""
    try:
        return normalized_url(href, base)
    except ValueError:
        return None


class PageLinks(HTMLParser):
    """The links (``<a href>``) and canonical URL (``<link rel=canonical>``) of a page,
    relative to its ``<base href>`` when it has one."""

    def __init__(self, url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = url
        self.links: list[str] = []
        self.canonical: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        href = found.get("href")
        if not href:
            return
        if tag == "base":
            self.base = _absolute(href, self.base) or self.base
        elif tag == "a" and "nofollow" not in (found.get("rel") or "").lower():
            self.links.append(href)
        elif tag == "link" and "canonical" in (found.get("rel") or "").lower().split():
            self.canonical = href


def page_links(html: bytes, url: str) -> tuple[list[str], str | None]:
    """A page's links and canonical URL, normalized (fragments dropped)."""
    parser = PageLinks(url)
    try:
        parser.feed(html.decode("utf-8", errors="replace"))
        parser.close()
    except (AssertionError, ValueError):  # html.parser gives up on some broken markup
        pass
    links = []
    for href in parser.links:
        link = _absolute(href, parser.base)
        if link is not None and not href.startswith(_NOT_PAGES):
            links.append(link)
    canonical = _absolute(parser.canonical, parser.base) if parser.canonical else None
    return links, canonical
