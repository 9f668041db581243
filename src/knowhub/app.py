"""``build_app(settings)``: a data directory's runtime, seen by one caller.

Interfaces (CLI, MCP, HTTP) hold an :class:`App`: a :class:`~knowhub.runtime.Runtime`
(store, models, caches, tracer, built once) and the :class:`~knowhub.caller.Caller` it
serves (the owner, unless :meth:`App.for_caller` says otherwise). What they do on a
collection they do on its handle, ``app.collection(name, version)``
(:class:`knowhub.collection.Collection`), which refuses what the caller may not do; the
App's own listings (collections, chunks, traces) leave out what it may not read. They never
build providers or touch the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from knowhub.caller import LOCAL_USER, Caller
from knowhub.checks import check_text, logical_name
from knowhub.collection import Collection
from knowhub.collection_names import checked_name, readable_views
from knowhub.config import Settings
from knowhub.errors import AuthError, QueryError
from knowhub.models import Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.llms.base import LLM
from knowhub.providers.stores.base import Store
from knowhub.query.cache import SearchCaches
from knowhub.query.rerank import RerankStage
from knowhub.runtime import Runtime
from knowhub.scope import Scope, chunk_scope, record_scope
from knowhub.trace.record import Trace
from knowhub.trace.tracer import Tracer
from knowhub.versions.record import CollectionView, Target, named, resolve_target

if TYPE_CHECKING:  # imported where used: a search or MCP `tools/list` never loads ingest
    from knowhub.ingest.pipeline import IngestReport
    from knowhub.ingest.verify import VerifyReport

__all__ = ["App", "build_app"]

T = TypeVar("T")


class App:
    """A data directory as one caller may use it."""

    def __init__(
        self,
        settings: Settings | Runtime,
        embedder: Embedder | None = None,
        interface: str = "python",
        *,
        caller: Caller = LOCAL_USER,
    ) -> None:
        """Over ``settings``' own new runtime (``embedder``: one already loaded, to share;
        ``interface``: who calls, recorded in every trace), which :meth:`close` closes; or
        over a runtime given (built with its own embedder and interface), left open."""
        self._owns = not isinstance(settings, Runtime)
        self.runtime = (
            settings if isinstance(settings, Runtime) else Runtime(settings, embedder, interface)
        )
        self.caller = caller

    # -- the runtime's parts, read through (nothing here depends on the caller)

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def interface(self) -> str:
        return self.runtime.interface

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def embedder(self) -> Embedder:
        return self.runtime.embedder

    @property
    def reranker(self) -> RerankStage | None:
        return self.runtime.reranker

    @property
    def llm(self) -> LLM | None:
        return self.runtime.llm

    @property
    def tracer(self) -> Tracer:
        return self.runtime.tracer

    @property
    def caches(self) -> SearchCaches:
        return self.runtime.caches

    # -- the caller's door

    def for_caller(self, caller: Caller) -> App:
        """This App's runtime as ``caller`` may use it: a collection it may not read is
        refused with one message (:meth:`Caller.check_read`), a change by a read-only one
        too (:meth:`Caller.check_write`); listings, chunk look-ups and traces leave out what
        it may not read, and every collection handle applies its data scope
        (``knowhub.scope``)."""
        return self if caller == self.caller else App(self.runtime, caller=caller)

    def scoped(self, scope: Scope) -> App:
        """This App for its caller limited to the data scope ``scope``."""
        return self.for_caller(replace(self.caller, scope=scope))

    @property
    def scope(self) -> Scope:
        """The data scope of this App's caller: what it sees inside what it may read."""
        return self.caller.scope

    def collection(self, name: str | None = None, version: int | None = None) -> Collection:
        """The handle of ``name`` (the default collection when None) at its active version,
        or at ``version``; it resolves which on first use. A name the caller may not read is
        refused now; so is the default of a caller limited to some collections."""
        if name is not None or "*" not in self.caller.collections:
            name = self.named(name)
        return Collection(self.runtime, self.caller, name, version)

    def named(self, name: str | None = None, *, writing: bool = False) -> str:
        """The collection a request on ``name`` means (:func:`checked_name`): ``name``, or
        the default for this caller (an ingest's, with ``writing``); one it may read."""
        return checked_name(self.runtime, self.caller, name, writing=writing)

    def default_collection(self, *, writing: bool = False) -> str:
        """The collection a request naming none uses (an ingest's, with ``writing``): the
        one rule of :mod:`knowhub.default_collection`, for the collections this App's
        caller may read."""
        return self.named(None, writing=writing)

    def resolve(self, collection: str | None = None, version: int | None = None) -> Target:
        """The version a request on ``collection`` uses: the active one, read now (so an
        activation applies from the next request on), or version ``version``."""
        return resolve_target(self.store, self.named(collection), version)

    def visible(self, items: Iterable[T], collection: Callable[[T], str]) -> list[T]:
        """The ``items`` (of a listing made outside the store: metrics, eval reports) whose
        ``collection`` this App's caller may read."""
        return self.caller.readable(items, collection)

    def collections(self) -> list[CollectionView]:
        """Each collection once, under its own name, as its active version holds it; for a
        scoped App its counts are of the documents the scope sees (hidden ones uncounted);
        those the caller may not read left out."""
        views = readable_views(self.runtime, self.caller)
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

    def traces(self) -> Iterator[Trace]:
        """The recorded traces of this data dir this App's caller may read
        (:meth:`Caller.may_see`), oldest first."""
        return (trace for trace in self.runtime.traces() if self.caller.may_see(trace))

    def verify(self, collection: str | None = None, fix: bool = False) -> VerifyReport:
        """Check that the index matches its files (every collection unless one is named);
        ``fix`` repairs what it can (re-ingest, remove, delete orphans), then checks again:
        a change of the knowledge base (one at a time, ``Runtime.writing``), for a caller
        that may write and sees every data scope."""
        if not fix:
            return self._verify(collection, fix)
        self.caller.check_write("repair the index")
        if not self.scope.unrestricted:
            raise AuthError(
                "repairing the index needs an unrestricted data scope: it removes and reads "
                "again documents of every scope (use a token without tenants, datasets, "
                "roles or max_visibility limits)"
            )
        with self.runtime.writing:
            return self._verify(collection, fix)

    def _verify(self, collection: str | None, fix: bool) -> VerifyReport:
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
            as_uploader = self.scoped(upload.scope).collection(upload.collection)
            return as_uploader.ingest(paths, upload.tags)

        uploads = Uploads(Queue(data_dir), left, ingest_as)
        return verify_index(self.store, embedders, reingest if fix else None, uploads)

    def close(self) -> None:
        """Close the runtime this App built (one over a runtime given leaves it open)."""
        if self._owns:
            self.runtime.close()


def build_app(settings: Settings, interface: str = "python") -> App:
    """Create the application object for ``settings`` (providers load lazily)."""
    return App(settings, interface=interface)
