"""A website as a source of documents (``knowhub ingest https://…``, ``sources: - url:``):
crawled into its mirror under ``DATA_DIR/sources/web/``, each page cited by its URL."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.ingest.origin import Origin
from knowhub.ingest.sources import Fetched, SourceNote, mirror_lock, mirror_root
from knowhub.ingest.web.crawl import CrawlOptions, crawl
from knowhub.ingest.web.mirror import Manifest
from knowhub.ingest.web.policy import web_target

__all__ = ["WEB_OPTIONS", "WebSource", "is_web_url"]

WEB_OPTIONS = frozenset({"depth", "max_pages", "include", "exclude"})
"""The options a website takes (``--depth`` …, or keys of its ``sources:`` entry)."""


def is_web_url(spec: str) -> bool:
    """Whether ``spec`` names a website (``http://``, ``https://``), not a path."""
    return re.match(r"(?i)https?://", spec) is not None


@dataclass(frozen=True)
class WebSource:
    """The site at ``spec`` (a checked URL), crawled as ``options`` say."""

    spec: str
    options: CrawlOptions

    @property
    def local_reach(self) -> bool:
        return False  # every address is checked by the web policy

    @classmethod
    def from_spec(cls, spec: str, options: Mapping[str, Any] | None = None) -> WebSource:
        """The source a URL and its options name; a URL the policy refuses by its form
        (scheme, user name) or an unknown option raises, naming it and the fix."""
        given = dict(options or {})
        unknown = sorted(set(given) - WEB_OPTIONS)
        if unknown:
            raise ConfigError(
                f"{spec}: unknown option(s) {', '.join(unknown)} for a website: "
                f"use {', '.join(sorted(WEB_OPTIONS))}"
            )
        for key in ("include", "exclude"):
            given[key] = tuple(given.get(key) or ())
        web_target(spec)  # refused early: before any request or mirror
        return cls(spec, CrawlOptions(**given))

    def key(self) -> str:
        """The mirror's folder name: host and path, readable, and a hash of the spec."""
        target = web_target(self.spec)
        readable = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{target.host}{_path(self.spec)}")
        return f"{readable[:60].strip('_')}-{hashlib.sha256(target.url.encode()).hexdigest()[:8]}"

    def fetch(self, settings: Settings, note: SourceNote | None = None) -> Fetched:
        """Crawl the site into its mirror (only what changed since the last crawl)."""
        root = mirror_root(settings, "web", self.key())
        (root / "pages").mkdir(parents=True, exist_ok=True)
        with mirror_lock(root):  # two crawls of one site wait for each other
            result = crawl(self.spec, self.options, settings.ingest.web, root, note or _quiet)
            sources = Manifest.read(root / "manifest.json").sources()
        origin = Origin(root / "pages", lambda relative: sources.get(relative, relative))
        return Fetched(origin, result.skipped, result.failed, counts=result.counts)


def _path(url: str) -> str:
    return web_target(url).url.split("/", 3)[3] if url.count("/") >= 3 else ""


def _quiet(_line: str) -> None:
    return None
