"""``build_app(settings)``: the one place providers are constructed.

Interfaces (CLI, MCP, HTTP) hold an :class:`App`; what they do on a collection they do on
its handle, ``app.collection(name, version)`` (:class:`knowhub.collection.Collection`), or
through the App's shorthands for it. They never build providers or touch the store.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from knowhub import registry
from knowhub.answer.events import AnswerEvent
from knowhub.caller import LOCAL_USER, Caller
from knowhub.checks import check_collection_name, check_text, logical_name
from knowhub.collection import Collection, named
from knowhub.config import Settings
from knowhub.default_collection import ALL, default_collection
from knowhub.errors import ConfigError, KnowhubError, QueryError
from knowhub.models import DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.rerankers.base import Reranker
from knowhub.providers.stores.base import FaqEntry, Store
from knowhub.query.cache import SearchCaches
from knowhub.query.pipeline import SearchResult, StageHook
from knowhub.query.rerank import RerankStage
from knowhub.scope import Scope, chunk_scope, record_scope
from knowhub.trace.jsonl import read_traces
from knowhub.trace.record import Trace, new_trace
from knowhub.trace.tracer import Tracer, build_tracer
from knowhub.versions.record import (
    CollectionView,
    Target,
    collection_views,
    embedder_spec,
    resolve_target,
)

if TYPE_CHECKING:  # imported where used: a search or MCP `tools/list` never loads ingest
    from knowhub.ingest.bundle import BundleStats
    from knowhub.ingest.deadletters import FailedFile
    from knowhub.ingest.pipeline import IngestReport, Progress
    from knowhub.ingest.verify import VerifyReport

__all__ = ["App", "build_app"]


class App:
    """Ingest, search and inspect one data directory."""

    caller: Caller = LOCAL_USER  # who calls through this App (see :meth:`for_caller`)

    def __init__(
        self, settings: Settings, embedder: Embedder | None = None, interface: str = "python"
    ) -> None:
        """``embedder``: one already loaded, to share between Apps (server sessions);
        ``interface``: who calls (cli, mcp, http), recorded in every trace."""
        self.settings = settings
        self.interface = interface
        self.caches = SearchCaches.sized(
            settings.search.query_cache_size, settings.search.result_cache_size
        )
        if embedder is not None:
            self.__dict__["embedder"] = embedder  # fills the cached_property below
        self._version_embedders: dict[str, Embedder] = {}
        self._embedders_lock = threading.Lock()

    @cached_property
    def store(self) -> Store:
        return cast("Store", registry.create("store", self.settings.store.provider, self.settings))

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

    @cached_property
    def tracer(self) -> Tracer:
        return build_tracer(self.settings)

    @cached_property
    def llm(self) -> LLM | None:
        """The answering model, or None for ``llm.provider: none`` (extractive answers)."""
        return cast("LLM | None", registry.create("llm", self.settings.llm.provider, self.settings))

    # -- collections: which version of which collection a request reads

    def resolve(self, collection: str | None = None, version: int | None = None) -> Target:
        """The version a request on ``collection`` uses: the active one, read now (so an
        activation applies from the next request on), or version ``version``; one the
        caller may read (:meth:`Caller.check_read`)."""
        name = check_collection_name(collection or self.default_collection())
        self.caller.check_read(name)
        return resolve_target(self.store, name, version)

    def default_collection(self, *, writing: bool = False) -> str:
        """The collection a request naming none uses (an ingest's, with ``writing``): the
        one rule of :mod:`knowhub.default_collection`, for the collections this App's
        caller may read."""
        return default_collection(self.store, self.settings, self.allowed, writing=writing)

    @property
    def allowed(self) -> frozenset[str]:
        """The collections this App's caller may read (``"*"``: all)."""
        return ALL if "*" in self.caller.collections else self.caller.collections

    @property
    def scope(self) -> Scope:
        """The data scope of this App's caller: what it sees inside what it may read."""
        return self.caller.scope

    def collection(self, name: str | None = None, version: int | None = None) -> Collection:
        """The handle of ``name`` (the default collection when None) at its active version,
        or at ``version``; it resolves which on first use. A name the caller may not read is
        refused now; so is the default of a caller limited to some collections."""
        if name is not None or "*" not in self.caller.collections:
            name = check_collection_name(name or self.default_collection())
            self.caller.check_read(name)
        return Collection(self, name, version)

    def for_caller(self, caller: Caller) -> App:
        """This App as ``caller`` may use it: the same store, models and caches; a
        collection it may not read is refused with one message (:meth:`Caller.check_read`),
        listings and chunk look-ups leave such collections out, and every collection
        handle applies its data scope (``knowhub.scope``)."""
        return self if caller == self.caller else _CallerApp(self, caller)

    def scoped(self, scope: Scope) -> App:
        """This App for its caller limited to the data scope ``scope``."""
        return self.for_caller(replace(self.caller, scope=scope))

    def embedder_with(self, settings: Settings) -> Embedder:
        """The embedder ``settings`` configure, loaded once per App (the App's own one
        when they configure the same)."""
        spec = embedder_spec(settings)
        if spec == embedder_spec(self.settings):
            return self.embedder
        key = json.dumps(spec, sort_keys=True)
        with self._embedders_lock:
            if key not in self._version_embedders:
                built: Embedder = registry.create("embedder", settings.embedder.provider, settings)
                self._version_embedders[key] = built
            return self._version_embedders[key]

    def collections(self) -> list[CollectionView]:
        """Each collection once, under its own name, as its active version holds it; for a
        scoped App its counts are of the documents the scope sees (hidden ones uncounted);
        those the caller may not read left out."""
        views = self.caller.readable(collection_views(self.store), lambda view: view.name)
        return views if self.scope.unrestricted else [self._scoped_counts(v) for v in views]

    def _scoped_counts(self, view: CollectionView) -> CollectionView:
        cid = self.store.collection_id(self.resolve(view.name).physical)
        records = self.store.records(cid) if cid is not None else []
        seen = [r for r in records if self.scope.admits(record_scope(r.metadata))]
        chunks = sum(r.chunk_count for r in seen)
        return replace(view, documents=len(seen), chunks=chunks, lexical_chunks=chunks)

    def chunk(self, chunk_id: str) -> list[Hit]:
        """The chunk with this id in the active version of its collection, in a collection
        the caller may read."""
        targets: dict[str, Target] = {}
        found = []
        for hit in self.store.chunks_by_id(check_text(chunk_id, "chunk_id").strip()):
            name = logical_name(hit.collection)
            if not self.caller.may_read(name):
                continue  # looks like no chunk: nothing to probe
            target = targets.setdefault(name, resolve_target(self.store, name))
            if target.physical == hit.collection and self.scope.admits(chunk_scope(hit.metadata)):
                found += named([hit], target)
        if not found:
            raise QueryError(f"no chunk with id {chunk_id!r}: copy a chunk_id from a search result")
        return found

    def verify(self, collection: str | None = None, fix: bool = False) -> VerifyReport:
        """Check that the index matches its files (every collection unless one is named);
        ``fix`` repairs what it can (re-ingest, remove, delete orphans), then checks again."""
        from knowhub.ingest.uploads import Leftovers, Queue, QueuedUpload, leftovers
        from knowhub.ingest.verify import Uploads, verify_index

        if collection is not None:
            self.collection(collection).store_id()  # an unknown name is an error
        names = [collection] if collection else [c.name for c in self.collections()]
        handles = {h.target.physical: h for h in map(self.collection, names)}
        embedders = {p: (h.embedder.model_id, h.embedder.dim) for p, h in handles.items()}

        def reingest(
            paths: Sequence[Path], name: str, tags: Mapping[str, str], include: Sequence[str]
        ) -> IngestReport:
            return handles[name].ingest(paths, tags, include=include, exclude=[])

        data_dir = Path(self.settings.data_dir)

        def left(name: str, indexed: set[Path]) -> Leftovers:
            return leftovers(data_dir, handles[name].name, indexed)

        def ingest_as(upload: QueuedUpload, paths: Sequence[Path]) -> IngestReport:
            as_uploader = self.scoped(upload.scope)
            return as_uploader.ingest(paths, upload.collection, upload.tags)

        uploads = Uploads(Queue(data_dir), left, ingest_as)
        return verify_index(self.store, embedders, reingest if fix else None, uploads)

    # -- traces

    def traces(self) -> Iterator[Trace]:
        """Every recorded trace of this data dir, oldest first."""
        return read_traces(Path(self.settings.data_dir) / "traces")

    @contextmanager
    def traced(self, kind: str, collection: str, query: str | None) -> Iterator[Trace]:
        """A trace of the block's run, emitted when it ends, with the error if it failed."""
        trace, clock = new_trace(kind, self.interface, collection)
        trace.query = query
        try:
            yield trace
        except KnowhubError as exc:
            trace.error = str(exc)
            raise
        except Exception as exc:  # a bug still leaves a trace saying what broke
            trace.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.emit(trace, clock)

    def emit(self, trace: Trace, clock: float) -> None:
        """Write ``trace``, begun at ``clock`` (perf_counter), with the read version's revision."""
        trace.duration_ms = round((time.perf_counter() - clock) * 1000.0, 3)
        if trace.kb_version is not None:
            try:
                cid = self.store.collection_id(trace.kb_version["physical"])
                revision = None if cid is None else self.store.version(cid)
            except KnowhubError:
                revision = None  # an unreadable collection is the trace's error
            # A collection that does not exist was not read: the trace's error says so.
            trace.kb_version = (
                None if revision is None else {**trace.kb_version, "revision": revision}
            )
        self.tracer.emit(trace)

    def close(self) -> None:
        if "store" in self.__dict__:
            self.store.close()

    # -- shorthands: the same on ``self.collection(collection, version)``

    def search(
        self,
        query: str,
        collection: str | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
        min_score: float | None = None,
        on_stage: StageHook | None = None,
        *,
        version: int | None = None,
    ) -> SearchResult:
        """One hybrid search of the collection's active version (or ``version``), traced."""
        handle = self.collection(collection, version)
        return handle.search(query, top_k, filters, min_score, on_stage)

    def ask(
        self,
        question: str,
        collection: str | None = None,
        filters: Filters | None = None,
        history: Sequence[ChatMessage] = (),
        *,
        session_id: str | None = None,
    ) -> Iterator[AnswerEvent]:
        """Answer ``question`` from the collection (see :meth:`Collection.ask`)."""
        return self.collection(collection).ask(question, filters, history, session_id=session_id)

    def ingest(
        self,
        paths: Sequence[Path],
        collection: str | None = None,
        tags: Mapping[str, str] | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] | None = None,
        prune: bool = False,
        progress: Progress | None = None,
        *,
        version: int | None = None,
        confine: Path | None = None,
        prune_renamed: bool = False,
    ) -> IngestReport:
        """Bring the collection's active version (or ``version``) in line with ``paths``,
        embedded and chunked as that version was built; with ``confine``, only files
        resolving inside that folder (a served folder: symlinks leading out are skipped);
        with ``prune_renamed``, a prune also removes the vanished documents of a folder
        renamed into ``paths`` (its files found there, its old path gone)."""
        handle = self.collection(collection, version)  # unnamed: the writers' default
        return handle.ingest(
            paths,
            tags,
            include,
            exclude,
            prune,
            progress,
            confine=confine,
            prune_renamed=prune_renamed,
        )

    def debug_search(
        self,
        query: str,
        collection: str | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
    ) -> dict[str, Any]:
        return self.collection(collection).debug_search(query, top_k, filters)

    def documents(
        self, collection: str | None = None, *, version: int | None = None
    ) -> list[DocumentRecord]:
        return self.collection(collection, version).documents()

    def failed_files(self, collection: str | None = None) -> list[FailedFile]:
        return self.collection(collection).failed_files()

    def document(self, doc_hash: str, collection: str | None = None) -> DocumentRecord:
        return self.collection(collection).document(doc_hash)

    def document_chunks(self, record: DocumentRecord) -> list[Hit]:
        return self.collection(record.collection).document_chunks(record)

    def remove(
        self, key: str, collection: str | None = None, *, all_matches: bool = False
    ) -> list[DocumentRecord]:
        return self.collection(collection).remove(key, all_matches=all_matches)

    def faq_import(
        self, paths: Sequence[Path], collection: str | None = None
    ) -> list[tuple[str, int]]:
        return self.collection(collection).faq_import(paths)

    def faq(self, collection: str | None = None) -> list[FaqEntry]:
        return self.collection(collection).faq()

    def faq_remove(self, source: str, collection: str | None = None) -> int:
        return self.collection(collection).faq_remove(source)

    def export(self, out: Path, collection: str | None = None) -> BundleStats:
        return self.collection(collection).export(out)

    def import_bundle(self, path: Path, collection: str | None = None) -> BundleStats:
        """Load a bundle into ``collection`` (default: the one it was exported from)."""
        from knowhub.ingest.bundle import bundle_collection

        return self.collection(collection or bundle_collection(path)).import_bundle(path)


class _CallerApp(App):
    """:meth:`App.for_caller`'s view: its providers and caches are its base's (built once),
    its caller its own (which the App's methods check)."""

    def __init__(self, base: App, caller: Caller) -> None:
        self._base = base
        self.settings, self.interface, self.caches = base.settings, base.interface, base.caches
        self._version_embedders = base._version_embedders
        self._embedders_lock = base._embedders_lock
        self.caller = caller

    @property
    def store(self) -> Store:
        return self._base.store

    @property
    def embedder(self) -> Embedder:
        return self._base.embedder

    @property
    def reranker(self) -> RerankStage | None:
        return self._base.reranker

    @property
    def tracer(self) -> Tracer:
        return self._base.tracer

    @property
    def llm(self) -> LLM | None:
        return self._base.llm

    def for_caller(self, caller: Caller) -> App:
        return self._base.for_caller(caller)

    def close(self) -> None:
        """Nothing: the base owns the store."""


def build_app(settings: Settings, interface: str = "python") -> App:
    """Create the application object for ``settings`` (providers load lazily)."""
    return App(settings, interface=interface)
