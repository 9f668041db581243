"""A crawl of a site into its mirror: pages under the start URL's path (to ``depth`` links
away, at most ``max_pages``), seeded by sitemaps and llms.txt, robots.txt obeyed, each page
asked for conditionally when the mirror holds it (304: the file untouched; 404/410: the
file removed, so that the ingest's prune removes its document)."""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import httpx2

from knowhub.config.web import WebSettings
from knowhub.errors import IngestError, KnowhubError
from knowhub.ingest.stopping import stop_if_shutting_down
from knowhub.ingest.web.client import Reply, WebClient
from knowhub.ingest.web.discovery import llms_links, page_links, read_robots, sitemap_urls
from knowhub.ingest.web.mirror import Manifest, PageEntry, file_extension, mirror_name
from knowhub.ingest.web.policy import web_target
from knowhub.ingest.web.rate import RateLimit

__all__ = ["CrawlOptions", "CrawlResult", "Scope", "crawl"]

_GONE = frozenset({404, 410})
MAX_CRAWL_DELAY_S = 60.0  # a robots.txt Crawl-delay beyond it: it (a day per page is no crawl)
# Sitemap URLs read as seeds, at most: max(SEEDS_PER_PAGE × max_pages, MIN_SEEDS).
SEEDS_PER_PAGE = 10
MIN_SEEDS = 10_000


@dataclass(frozen=True)
class CrawlOptions:
    """How far a crawl goes: ``depth`` links from the start page (0: it alone),
    ``max_pages`` pages asked for, URL globs to keep (``include``) or leave (``exclude``)."""

    depth: int = 3
    max_pages: int = 1000
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scope:
    """The URLs a crawl of ``start`` may fetch: same scheme and host, a path under the start
    page's folder, matching the include globs (when any) and none of the exclude globs."""

    start: str
    options: CrawlOptions

    @property
    def prefix(self) -> str:
        return self.start[: self.start.rindex("/") + 1]

    def __contains__(self, url: str) -> bool:
        if not url.startswith(self.prefix) and url != self.start:
            return False
        if self.options.include and not _matches(url, self.options.include):
            return False
        return not _matches(url, self.options.exclude)


def _matches(url: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(url, glob) for glob in globs)


@dataclass
class CrawlResult:
    """What a crawl did: counts (``fetched``, ``not_modified``, ``removed``, ``skipped``,
    ``failed``) and the pages skipped or failed, with why."""

    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


@dataclass
class _Crawl:
    scope: Scope
    pages: Path  # the mirror's files
    manifest: Manifest
    client: WebClient
    robots: RobotFileParser
    result: CrawlResult = field(default_factory=CrawlResult)
    frontier: deque[tuple[str, int]] = field(default_factory=deque)
    seen: set[str] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)  # claimed this run
    hashes: set[str] = field(default_factory=set)

    def add(self, url: str, depth: int) -> None:
        if url in self.seen or url not in self.scope:
            return
        self.seen.add(url)
        if not self.robots.can_fetch(self.client.settings.user_agent, url):
            self._skip(url, "disallowed by robots.txt")  # and out of the mirror, if it was
            return
        self.frontier.append((url, depth))

    def handle(self, url: str, depth: int, reply: Reply) -> None:
        entry = self.manifest.pages.get(url, PageEntry(depth=depth))
        if reply.status == 304 and entry.file:
            self.result.count("not_modified")
            self.sources.add(entry.source)
            self.hashes.add(entry.sha256)
            self._follow(reply.url, depth, (self.pages / entry.file).read_bytes())
        elif reply.status in _GONE and url in self.manifest.pages:
            self.result.count("removed")
            self.drop(url)
        elif reply.status in _GONE:  # a broken link
            self._skip(url, f"not found ({reply.status})", "not_found")
        elif reply.status != 200:
            self.result.failed.append((url, f"the server answered {reply.status}; kept"))
            self.result.count("failed")
        elif reply.url != url and reply.url not in self.scope:
            self._skip(url, f"redirected out of the crawl ({reply.url})")
        else:
            self._store(url, depth, reply, entry)

    def _store(self, url: str, depth: int, reply: Reply, entry: PageEntry) -> None:
        self.result.count("fetched")
        extension = file_extension(reply.content_type, reply.url)
        if extension is None:
            self._skip(url, f"content type {reply.content_type or '(none)'} is not read")
            return
        links, canonical = page_links(reply.body, reply.url) if extension == ".html" else ([], None)
        source = canonical if canonical and canonical in self.scope else reply.url
        digest = hashlib.sha256(reply.body).hexdigest()
        if source in self.sources or digest in self.hashes:
            self._skip(url, f"the same page as another ({source})")
        else:
            self.sources.add(source)
            self.hashes.add(digest)
            name = mirror_name(source, extension)
            if entry.file and entry.file != name:
                self.drop(url)
            path = self.pages / name
            if not path.is_file() or entry.sha256 != digest:  # same bytes: left as they are
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(reply.body)
            self.manifest.pages[url] = PageEntry(
                name, source, reply.etag, reply.last_modified, digest, depth
            )
        self._links(links, depth)

    def _follow(self, url: str, depth: int, body: bytes) -> None:
        if url.endswith((".html", ".htm", "/")) or body.lstrip()[:1] == b"<":
            self._links(page_links(body, url)[0], depth)

    def _links(self, links: list[str], depth: int) -> None:
        if depth < self.scope.options.depth:
            for link in links:
                self.add(link, depth + 1)

    def _skip(self, url: str, reason: str, counted: str = "skipped") -> None:
        self.result.skipped.append((url, f"{url}: {reason}"))  # as a file's: source first
        self.result.count(counted)
        self.drop(url)

    def drop(self, url: str) -> None:
        """Forget ``url``, and remove its file unless another URL's entry holds it."""
        entry = self.manifest.pages.pop(url, None)
        kept = {other.file for other in self.manifest.pages.values()}
        if entry is not None and entry.file and entry.file not in kept:  # not another URL's
            (self.pages / entry.file).unlink(missing_ok=True)


def crawl(
    start: str,
    options: CrawlOptions,
    settings: WebSettings,
    root: Path,
    note: Callable[[str], None],
) -> CrawlResult:
    """Bring the mirror under ``root`` (``pages/`` and ``manifest.json``) up to date with the
    site at ``start``."""
    start = web_target(start).url
    scope = Scope(start, options)
    manifest_path = root / "manifest.json"
    manifest = Manifest.read(manifest_path)
    rate = RateLimit(settings.requests_per_second)
    with WebClient(settings, origin=start) as client:
        robots = _robots(client, start, rate)  # not answered: raised, the mirror untouched
        _obey_crawl_delay(robots, settings.user_agent, rate, note)
        run = _Crawl(scope, root / "pages", manifest, client, robots)
        run.add(start, 0)
        if options.depth > 0:  # what sitemaps and llms.txt list counts as linked from it
            for url in _seeds(client, scope, robots, rate, note):
                run.add(url, 1)
        for url, entry in list(manifest.pages.items()):
            run.add(url, entry.depth)
        for url in set(manifest.pages) - run.seen:  # out of the crawl's scope now
            run.drop(url)
        try:
            _fetch_all(run, rate, note)
            manifest.refreshed_at = time.time()
        finally:  # stopped too: the pages fetched are in the mirror, their validators kept
            manifest.write(manifest_path)
    return run.result


def _fetch_all(run: _Crawl, rate: RateLimit, note: Callable[[str], None]) -> None:
    settings = run.client.settings
    asked = 0
    with ThreadPoolExecutor(settings.max_concurrency, thread_name_prefix="knowhub-crawl") as pool:
        flying: dict[Future[Reply], tuple[str, int]] = {}
        while run.frontier or flying:
            stop_if_shutting_down()  # a server's shutdown: the pages in flight land first
            while run.frontier and len(flying) < settings.max_concurrency:
                if asked >= run.scope.options.max_pages:
                    run.frontier.clear()
                    break
                url, depth = run.frontier.popleft()
                entry = run.manifest.pages.get(url)
                if entry is not None and not (run.pages / entry.file).is_file():
                    entry = None  # its file is gone from the mirror: asked for unconditionally
                flying[pool.submit(_get, run.client, rate, url, entry)] = (url, depth)
                asked += 1
            if not flying:
                break
            done, _ = wait(flying, return_when=FIRST_COMPLETED)
            for future in done:
                url, depth = flying.pop(future)
                _landed(run, url, depth, future)
            if asked % 25 == 0 and done:
                note(f"crawled {asked} pages, {len(run.frontier)} queued")


def _get(client: WebClient, rate: RateLimit, url: str, entry: PageEntry | None) -> Reply:
    rate.wait()
    return client.get(url, entry.conditional() if entry else None)


def _landed(run: _Crawl, url: str, depth: int, future: Future[Reply]) -> None:
    try:
        run.handle(url, depth, future.result())
    except KnowhubError as exc:  # the policy's refusal, a page too large
        run.result.failed.append((url, str(exc)))
        run.result.count("failed")
    except (httpx2.HTTPError, OSError) as exc:  # transient: the mirror keeps the page
        run.result.failed.append((url, f"not fetched ({type(exc).__name__}: {exc}); kept"))
        run.result.count("failed")


def _robots(client: WebClient, start: str, rate: RateLimit) -> RobotFileParser:
    """robots.txt's rules (a 4xx: none). Not answered (a server error, no connection, a
    refusal), :class:`IngestError` before the mirror is touched: RFC 9309 says to fetch
    nothing then, and a crawl that fetched nothing must not empty the collection."""
    url = "{0.scheme}://{0.netloc}/robots.txt".format(urlsplit(start))
    rate.wait()
    try:
        reply = client.get(url)
    except (KnowhubError, httpx2.HTTPError, OSError) as exc:
        raise _unanswered(url, f"{type(exc).__name__}: {exc}") from exc
    if reply.status != 200 and not 400 <= reply.status < 500:
        raise _unanswered(url, f"the server answered {reply.status}")
    return read_robots(reply.body.decode("utf-8", errors="replace"), reply.status)


def _unanswered(url: str, why: str) -> IngestError:
    return IngestError(
        f"{url} was not answered ({why}): a site is crawled only once its robots.txt is "
        "read (RFC 9309); nothing changed; try again later"
    )


def _obey_crawl_delay(
    robots: RobotFileParser, agent: str, rate: RateLimit, note: Callable[[str], None]
) -> None:
    delay = float(robots.crawl_delay(agent) or 0)
    if delay > MAX_CRAWL_DELAY_S:
        note(
            f"robots.txt asks for {delay:g} s between requests: {MAX_CRAWL_DELAY_S:g} s are "
            "waited (the most a crawl waits)"
        )
    if delay:
        rate.at_least(min(delay, MAX_CRAWL_DELAY_S))


def _seeds(
    client: WebClient,
    scope: Scope,
    robots: RobotFileParser,
    rate: RateLimit,
    note: Callable[[str], None],
) -> list[str]:
    """The pages sitemaps and llms.txt list, in the crawl's scope; the sitemaps' first
    ``max(SEEDS_PER_PAGE × max_pages, MIN_SEEDS)`` URLs only."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(scope.start))

    def read(url: str) -> bytes | None:
        rate.wait()
        try:
            reply = client.get(url)
        except (KnowhubError, httpx2.HTTPError, OSError):
            return None
        return reply.body if reply.status == 200 else None

    sitemaps = list(dict.fromkeys([*(robots.site_maps() or []), origin + "/sitemap.xml"]))
    most = max(SEEDS_PER_PAGE * scope.options.max_pages, MIN_SEEDS)
    found = list(itertools.islice(sitemap_urls(sitemaps, read), most + 1))
    if len(found) > most:
        del found[most:]
        note(f"the sitemaps list more than {most} pages: the first {most} are read as seeds")
    for llms in dict.fromkeys([scope.prefix + "llms.txt", origin + "/llms.txt"]):
        text = read(llms)
        if text is not None:
            found += llms_links(text.decode("utf-8", errors="replace"), llms)
    return [url for url in found if url in scope]
