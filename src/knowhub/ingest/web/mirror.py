"""A crawled site's mirror: each page a file named for its URL with the extension its
content type calls for (so the loaders read it), and a manifest beside the files (the
validators of conditional requests, which file is which URL, the last refresh)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from knowhub.providers.files import write_atomically

__all__ = ["Manifest", "PageEntry", "file_extension", "mirror_name"]

# Content types read, and the extension their loader is chosen by.
_TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/plain": ".txt",
}
# Text served as text/plain whose URL says what it is.
_TEXT_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._~-]")
_MAX_SEGMENT = 100


def file_extension(content_type: str, url: str) -> str | None:
    """The mirror extension of a page of ``content_type`` at ``url``; None: not read."""
    kind = content_type.split(";")[0].strip().lower()
    extension = _TYPES.get(kind)
    suffix = PurePosixPath(urlsplit(url).path).suffix.lower()
    if extension == ".txt" and suffix in _TEXT_EXTENSIONS:
        return suffix
    return extension


def mirror_name(url: str, extension: str) -> str:
    """The mirror's relative file name for ``url``: ``host/path`` made safe (``~hash`` for a
    segment changed to be safe). A name that is not the URL's path as it is (an extension
    or ``index`` added, a query) ends in ``~`` and a hash of the whole URL: ``/x`` and
    ``/x.html``, ``/d/`` and ``/d/index.html`` are two pages, in two files."""
    parts = urlsplit(url)
    segments = [_safe(unquote(s)) or "_" for s in (parts.path or "/").split("/")[1:]]
    stem = "" if parts.path.endswith("/") else segments[-1]
    if stem and stem.lower().endswith(extension) and not parts.query:
        return "/".join([_safe(parts.netloc), *segments])
    if stem.lower().endswith(extension):
        stem = stem[: -len(extension)]
    stem = f"{stem or 'index'}~{hashlib.sha256(url.encode()).hexdigest()[:12]}"
    return "/".join([_safe(parts.netloc), *segments[:-1], stem + extension])


def _safe(segment: str) -> str:
    safe = _UNSAFE.sub("_", segment)
    if safe in {".", ".."}:
        safe = safe.replace(".", "_")
    if safe != segment or len(safe) > _MAX_SEGMENT:
        digest = hashlib.sha256(segment.encode()).hexdigest()[:10]
        safe = f"{safe[:_MAX_SEGMENT]}~{digest}"
    return safe


@dataclass
class PageEntry:
    """A page fetched: where it is in the mirror (empty: not kept — a duplicate, a type not
    read), its source (its canonical URL), and the validators of the next request."""

    file: str = ""
    source: str = ""
    etag: str = ""
    last_modified: str = ""
    sha256: str = ""
    depth: int = 0

    def conditional(self) -> dict[str, str]:
        """The headers that let the server answer 304 when the page has not changed."""
        headers = {}
        if self.file and self.etag:
            headers["If-None-Match"] = self.etag
        if self.file and self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass
class Manifest:
    """The pages of a mirror by URL fetched, and when it was last refreshed (epoch s)."""

    pages: dict[str, PageEntry] = field(default_factory=dict)
    refreshed_at: float = 0.0

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """The manifest at ``path``; an empty one when there is none yet (or it is not one:
        the next crawl fetches everything again, unconditionally)."""
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            pages = {url: PageEntry(**entry) for url, entry in data["pages"].items()}
            return cls(pages, float(data.get("refreshed_at", 0.0)))
        except (OSError, ValueError, KeyError, TypeError):
            return cls()

    def write(self, path: Path) -> None:
        """Written whole or not at all (a crash leaves the previous manifest)."""
        data = {
            "refreshed_at": self.refreshed_at,
            "pages": {u: asdict(e) for u, e in self.pages.items()},
        }
        write_atomically(path, json.dumps(data, indent=1, sort_keys=True).encode())

    def sources(self) -> dict[str, str]:
        """Each mirror file's source: the URL it is cited by."""
        return {entry.file: entry.source for entry in self.pages.values() if entry.file}
