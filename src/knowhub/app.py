"""``build_app(settings)``: the one place providers are constructed.

Interfaces (CLI, MCP, HTTP) hold an :class:`App` and call its methods; they
never build providers or touch the store themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path

from knowhub import registry
from knowhub.config import Settings
from knowhub.errors import ConfigError, QueryError, StoreError
from knowhub.ingest.pipeline import IngestReport, Progress, ingest
from knowhub.models import DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.rerankers.base import Reranker
from knowhub.providers.stores.sqlite import CollectionInfo, SQLiteStore
from knowhub.query.cache import SearchCaches
from knowhub.query.pipeline import SearchRequest, SearchResult, StageHook, search
from knowhub.query.rerank import RerankStage
from knowhub.validate import check_collection_name

__all__ = ["App", "build_app"]


class App:
    """Ingest, search and inspect one data directory."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        """``embedder``: one already loaded, to share between Apps (server sessions)."""
        self.settings = settings
        self.caches = SearchCaches.sized(
            settings.search.query_cache_size, settings.search.result_cache_size
        )
        if embedder is not None:
            self.__dict__["embedder"] = embedder  # fills the cached_property below

    @cached_property
    def store(self) -> SQLiteStore:
        store: SQLiteStore = registry.create("store", self.settings.store.provider, self.settings)
        return store

    @cached_property
    def embedder(self) -> Embedder:
        embedder: Embedder = registry.create(
            "embedder", self.settings.embedder.provider, self.settings
        )
        return embedder

    @cached_property
    def reranker(self) -> RerankStage | None:
        """The rerank stage, or None when ``reranker.provider`` is ``none`` (the default)."""
        opts = self.settings.reranker
        reranker: Reranker | None = registry.create("reranker", opts.provider, self.settings)
        if reranker is None:
            return None
        if not isinstance(reranker, Reranker):
            raise ConfigError(
                f"reranker provider {opts.provider!r} built {type(reranker).__name__}, which is "
                "not a knowhub.providers.rerankers.Reranker: fix the plugin's factory"
            )
        return RerankStage(reranker, opts.provider, opts.candidates, opts.timeout_s)

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()

    def ingest(
        self,
        paths: Sequence[Path],
        collection: str | None = None,
        tags: Mapping[str, str] | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] | None = None,
        prune: bool = False,
        progress: Progress | None = None,
    ) -> IngestReport:
        name = check_collection_name(collection or self.settings.collection)
        return ingest(
            self.store, self.embedder, self.settings, paths, name,
            tags=tags, include=include, exclude=exclude, prune=prune, progress=progress,
        )  # fmt: skip

    def search(
        self,
        query: str,
        collection: str | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
        min_score: float | None = None,
        on_stage: StageHook | None = None,
    ) -> SearchResult:
        opts = self.settings.search
        request = SearchRequest(
            query=query,
            collection=collection or self.settings.collection,
            top_k=opts.top_k if top_k is None else top_k,
            filters=dict(filters or {}),
            min_score=opts.min_score if min_score is None else min_score,
        )
        return search(
            self.store, self.embedder, opts, request, self.reranker, self.caches, on_stage
        )

    def collections(self) -> list[CollectionInfo]:
        return self.store.collections()

    def documents(self, collection: str | None = None) -> list[DocumentRecord]:
        return self.store.records(self._collection_id(collection))

    def document(self, doc_hash: str, collection: str | None = None) -> DocumentRecord:
        """The document whose content hash is or starts with ``doc_hash`` (8+ characters)."""
        key = doc_hash.strip().lower()
        if len(key) < 8:
            raise QueryError(
                f"doc hash {doc_hash!r} is too short: give at least 8 characters of the "
                "source hash shown in search results"
            )
        found = [r for r in self.documents(collection) if r.doc_hash.startswith(key)]
        if len(found) != 1:
            name = collection or self.settings.collection
            problem = "no document" if not found else f"{len(found)} documents"
            raise QueryError(
                f"{problem} with hash {doc_hash!r} in collection {name!r}: copy doc_hash "
                "from a search hit"
            )
        return found[0]

    def chunk(self, chunk_id: str) -> list[Hit]:
        found = self.store.chunks_by_id(chunk_id.strip())
        if not found:
            raise QueryError(
                f"no chunk with id {chunk_id!r}: copy an id from `knowhub search` output"
            )
        return found

    def remove(self, key: str, collection: str | None = None) -> list[DocumentRecord]:
        """Remove documents matching a path (as given or as stored) or a doc-hash prefix."""
        cid = self._collection_id(collection)
        absolute = str(Path(key).absolute())
        found = self.store.find_records(cid, key) or self.store.find_records(cid, absolute)
        if not found:
            raise QueryError(
                f"no document {key!r} in collection {collection or self.settings.collection!r}: "
                "give a path or a doc hash (8+ characters) as listed by `knowhub docs`"
            )
        for record in found:
            self.store.remove_document(cid, record.path)
        return found

    def _collection_id(self, collection: str | None) -> int:
        name = check_collection_name(collection or self.settings.collection)
        cid = self.store.collection_id(name)
        if cid is None:
            known = ", ".join(c.name for c in self.store.collections()) or "none yet"
            raise StoreError(f"unknown collection {name!r} (known: {known}); ingest into it first")
        return cid


def build_app(settings: Settings) -> App:
    """Create the application object for ``settings`` (providers load lazily)."""
    return App(settings)
