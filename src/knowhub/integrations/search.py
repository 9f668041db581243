"""Where a framework's retriever gets its hits: a server's ``/api/search`` or an App.

Both searchers return :class:`~knowhub.models.Hit` objects, so the LangChain and LlamaIndex
adapters turn one kind of result into their own, with the same metadata
(:func:`hit_metadata`) whichever way the hits came. The App is imported only for its type:
a retriever over HTTP never loads the runtime (store, models).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import httpx2

from knowhub.checks import check_filters, check_min_score, check_top_k
from knowhub.errors import AuthError, CollectionNotFound, KnowhubError, QueryError
from knowhub.models import FilterValue, Hit, citation

if TYPE_CHECKING:
    from knowhub.app import App

__all__ = [
    "ApiSearcher",
    "AppSearcher",
    "Made",
    "SearchArgs",
    "Searcher",
    "hit_metadata",
    "missing",
]


def missing(framework: str, extra: str, exc: ImportError) -> ImportError:
    """The error for a framework that is not installed, naming the extra that installs it."""
    error = ImportError(
        f"{framework} is not installed: install knowhub's {extra!r} extra "
        f"(pip install 'knowhub[{extra}]')"
    )
    error.__cause__ = exc
    return error


@dataclass(frozen=True)
class SearchArgs:
    """What every search of one retriever asks besides the query (None: the server's or
    the App's configured default; ``collection`` None: the caller's default one)."""

    collection: str | None = None
    top_k: int | None = None
    filters: dict[str, FilterValue] = field(default_factory=dict)
    min_score: float | None = None

    @classmethod
    def checked(
        cls,
        collection: str | None,
        top_k: int | None,
        filters: dict[str, Any] | None,
        min_score: float | None,
    ) -> SearchArgs:
        """The arguments, checked as ``/api/search`` checks them (one wording), so a bad
        one fails when the retriever is made, not at its first question."""
        return cls(
            collection,
            None if top_k is None else check_top_k(top_k),
            check_filters(filters),
            None if min_score is None else check_min_score(min_score),
        )

    def body(self, query: str) -> dict[str, Any]:
        """The ``/api/search`` request: the fields left to the server's defaults unsent."""
        sent = {"collection": self.collection, "top_k": self.top_k, "min_score": self.min_score}
        body = {"query": query, **{k: v for k, v in sent.items() if v is not None}}
        return {**body, "filters": self.filters} if self.filters else body


@runtime_checkable
class Searcher(Protocol):
    """One search, as a list of hits best first."""

    def search(self, query: str, args: SearchArgs) -> list[Hit]: ...

    async def asearch(self, query: str, args: SearchArgs) -> list[Hit]: ...


class Made:
    """The two ways to make a retriever, for either framework's class (made as
    ``cls(searcher=..., **options)``)."""

    if TYPE_CHECKING:  # what the frameworks' classes take; their own __init__ runs

        def __init__(self, *, searcher: Searcher, **options: Any) -> None: ...

    @classmethod
    def from_url(
        cls, url: str, token: str | None = None, *, timeout_s: float = 60.0, **options: Any
    ) -> Self:
        """Over ``url``'s ``/api/search`` (``knowhub serve http``), sending ``token``."""
        return cls(searcher=ApiSearcher(url, token, timeout_s), **options)

    @classmethod
    def from_app(cls, app: App, **options: Any) -> Self:
        """Over an App in this process (``knowhub.build_app(settings)``), with its caller's
        rights."""
        return cls(searcher=AppSearcher(app), **options)


class AppSearcher:
    """Searches through an in-process App's handles, with the App's caller's rights."""

    def __init__(self, app: App) -> None:
        self.app = app

    def search(self, query: str, args: SearchArgs) -> list[Hit]:
        found = self.app.collection(args.collection).search(
            query, args.top_k, args.filters, args.min_score
        )
        return found.hits

    async def asearch(self, query: str, args: SearchArgs) -> list[Hit]:
        # A search embeds and reads the store: off the event loop, as the HTTP server runs it.
        return await asyncio.to_thread(self.search, query, args)


class ApiSearcher:
    """Searches a ``knowhub serve http`` server's ``/api/search`` with a bearer token."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 60.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise QueryError(
                f"url must start with http:// or https://, got {url!r}: give the address "
                "`knowhub serve http` listens on, e.g. http://127.0.0.1:8080"
            )
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout_s = timeout_s

    def __repr__(self) -> str:  # never the token: retrievers are printed and traced
        return f"ApiSearcher(url={self.url!r})"

    def search(self, query: str, args: SearchArgs) -> list[Hit]:
        with httpx2.Client(timeout=self.timeout_s, verify=_tls()) as client:
            try:
                reply = client.post(self._endpoint, json=args.body(query), headers=self._headers)
            except httpx2.HTTPError as exc:
                raise self._unreachable(exc) from exc
        return _hits(reply)

    async def asearch(self, query: str, args: SearchArgs) -> list[Hit]:
        async with httpx2.AsyncClient(timeout=self.timeout_s, verify=_tls()) as client:
            try:
                reply = await client.post(
                    self._endpoint, json=args.body(query), headers=self._headers
                )
            except httpx2.HTTPError as exc:
                raise self._unreachable(exc) from exc
        return _hits(reply)

    @property
    def _endpoint(self) -> str:
        return self.url + "/api/search"

    def _unreachable(self, exc: httpx2.HTTPError) -> KnowhubError:
        return KnowhubError(
            f"knowhub at {self.url} did not answer ({type(exc).__name__}: {exc}): "
            "check the url and that `knowhub serve http` runs there"
        )


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client: httpx would load the CA bundle for each new one."""
    return ssl.create_default_context()


def _hits(reply: httpx2.Response) -> list[Hit]:
    """The hits of a ``/api/search`` answer, or its error as knowhub's own exception."""
    if reply.status_code != 200:
        raise _error(reply)
    known = {f.name for f in fields(Hit)}
    return [Hit(**{k: v for k, v in hit.items() if k in known}) for hit in reply.json()["hits"]]


def _error(reply: httpx2.Response) -> KnowhubError:
    """The server's ``{"error", "status"}`` as the exception it was raised as."""
    try:
        message = str(reply.json()["error"])
    except (ValueError, KeyError, TypeError):
        message = reply.text[:200] or reply.reason_phrase
    text = f"knowhub answered {reply.status_code}: {message}"
    if reply.status_code in (401, 403):
        return AuthError(text)
    if reply.status_code == 404:
        return CollectionNotFound(text)
    if reply.status_code in (400, 413):
        return QueryError(text)
    return KnowhubError(text)


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """What a framework's document carries besides the text: where the passage is (with a
    ready-made ``citation``, ``source, p. 3, § A > B, lines 10-24``) and how it scored."""
    return {
        "source": hit.source,
        "title": hit.title,
        "section_path": hit.section_path,
        "page": hit.page,
        "citation": citation(hit),
        "score": hit.score,
        "relevance": hit.relevance,
        "chunk_id": hit.chunk_id,
        "collection": hit.collection,
        "doc_hash": hit.doc_hash,
        "language": hit.language,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
    }
