"""One version of one collection, as one caller may use it: the door every request goes
through.

``app.collection(name, version)`` returns a :class:`Collection` over the App's runtime
(store, models, caches, tracer) and caller; every operation on a collection (search, ingest,
remove, documents, ask, FAQ, export) is a method of it, so "which version of which
collection, and may this caller" is decided once, when the handle is first used, and
everything it does reads and writes that version, inside the caller's data scope. A caller
that may not read the collection is refused (:meth:`Caller.check_read`), a read-only one
that tries to change it too (:meth:`Caller.check_write`). Take a new handle per request to
follow activations (a request in flight keeps the version it started on).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from knowhub.answer.events import Answer, AnswerEvent, End, Token
from knowhub.answer.faq import FaqMatch, match_faq
from knowhub.answer.flow import Retrieved, answer
from knowhub.caller import Caller
from knowhub.checks import check_doc_hash_prefix, check_text
from knowhub.collection_names import checked_name, readable_views
from knowhub.config import SearchSettings, Settings
from knowhub.errors import AuthError, CollectionNotFound, KnowhubError, QueryError
from knowhub.ingest.members import MEMBER_SEPARATOR
from knowhub.models import DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.embedders.cached import CachedVectors
from knowhub.providers.images import image_store
from knowhub.providers.llms.base import ChatMessage
from knowhub.providers.stores.base import FaqEntry
from knowhub.query.calibration import recalibrate, with_range
from knowhub.query.debug import diagnose
from knowhub.query.pipeline import SearchRequest, SearchResult, StageHook, search, term_counts
from knowhub.query.tuning import tuned
from knowhub.runtime import Runtime
from knowhub.scope import DocumentScope, Scope, chunk_scope, record_scope
from knowhub.surrogates import escape_surrogates
from knowhub.trace.build import record_answer, record_ingest, record_search
from knowhub.trace.record import Trace, new_trace, preview
from knowhub.trace.stream import traced_stream
from knowhub.versions.record import Target, named, resolve_target, target_settings

if TYPE_CHECKING:  # ingest's modules load only when ingesting
    from knowhub.ingest.bundle import BundleStats
    from knowhub.ingest.deadletters import FailedFile
    from knowhub.ingest.origin import Origin
    from knowhub.ingest.pipeline import IngestReport, Progress
    from knowhub.ingest.sources import RemoteSource, SourceNote

__all__ = ["Collection"]


class Collection:
    """A collection's version (the active one unless ``version`` is given)."""

    def __init__(
        self,
        runtime: Runtime,
        caller: Caller,
        name: str | None = None,
        version: int | None = None,
    ) -> None:
        """``name`` None: the default collection for ``caller``
        (:mod:`knowhub.default_collection`)."""
        self.runtime = runtime
        self.caller = caller
        self._requested = name
        self._version = version

    @cached_property
    def target(self) -> Target:
        """The version this handle reads, resolved on first use: the active one, read now
        (so an activation applies from the next handle on), or ``version``."""
        name = checked_name(self.runtime, self.caller, self._requested)
        return resolve_target(self.runtime.store, name, self._version)

    @property
    def _scope(self) -> Scope:
        return self.caller.scope

    @property
    def name(self) -> str:
        return self.target.collection

    @cached_property
    def settings(self) -> Settings:
        """The settings with this version's embedder and chunking."""
        return target_settings(self.runtime.store, self.runtime.settings, self.target)

    @cached_property
    def embedder(self) -> Embedder:
        built = self.runtime.embedder_with(self.settings)
        return with_range(self.runtime.store, self.target.physical, built)

    @cached_property
    def search_settings(self) -> SearchSettings:
        """The search settings, with the dense weight chosen for this version where one
        was (:mod:`knowhub.query.tuning`)."""
        store, model_id = self.runtime.store, self.embedder.model_id
        cid = store.collection_id(self.target.physical)
        return tuned(store, cid, model_id, self.runtime.settings.search)

    def store_id(self) -> int:
        """The store id of this version; an unknown collection is an error."""
        cid = self.runtime.store.collection_id(self.target.physical)
        if cid is None:
            views = readable_views(self.runtime, self.caller)
            known = ", ".join(c.name for c in views) or "none yet"
            raise CollectionNotFound(
                f"unknown collection {self.name!r} (known: {known}); ingest into it first"
            )
        return cid

    def _reads(self, trace: Trace) -> None:
        trace.collection, trace.kb_version = self.name, self.target.describe()
        trace.scope = self._scope.to_dict()  # what it saw: the scope, never the token

    def _ran(self, trace: Trace, filters: Filters) -> None:
        """What the search applied: ``filters`` and, inside both legs, the caller's scope."""
        trace.effective_source = {"filters": dict(filters), "scope": self._scope.to_dict()}

    def _sees(self, record: DocumentRecord) -> bool:
        return self._scope.admits(record_scope(record.metadata))

    def _may_change(self, record: DocumentRecord) -> bool:
        """A writer of a data scope changes only documents whose scope is within its own (a
        document shared with every tenant is not one tenant's to take away)."""
        found = record_scope(record.metadata)
        return self._scope.unrestricted or (found is not None and self._scope.may_write(found))

    def _trace_name(self) -> str:
        """The collection a trace opens under, before :meth:`_reads` sets what was read: the
        one asked for, else the default one; a default that cannot be told (the request then
        fails inside the trace) is traced under the configured name."""
        if self._requested:
            return self._requested
        try:
            return self.name
        except KnowhubError:
            return self.runtime.settings.collection

    # -- search ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        min_score: float | None = None,
        on_stage: StageHook | None = None,
    ) -> SearchResult:
        """One hybrid search, traced."""
        with self.runtime.traced("search", self._trace_name(), query.strip()) as trace:
            self._reads(trace)
            result = self.retrieve(query, top_k, filters, min_score, on_stage)
            record_search(trace, result.timings_ms, result.counts, result.cache, result.hits)
            trace.source_filter = dict(filters or {})
            self._ran(trace, trace.source_filter)
        return result

    def retrieve(
        self,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        min_score: float | None = None,
        on_stage: StageHook | None = None,
    ) -> SearchResult:
        """The search without its own trace (a step of an answer, a gate's query)."""
        app, request = self.runtime, self._request(query, top_k, filters, min_score)
        opts = self.search_settings
        found = search(app.store, self.embedder, opts, request, app.reranker, app.caches, on_stage)
        return replace(found, hits=named(found.hits, self.target))

    def term_counts(
        self, terms: Sequence[str], limit: int, filters: Filters | None = None
    ) -> dict[str, int]:
        """How many chunks (up to ``limit``) the caller may see hold each lexical term."""
        request = self._request("terms", None, filters, None)
        return term_counts(self.runtime.store, request, terms, limit)

    def debug_search(
        self, query: str, top_k: int | None = None, filters: Filters | None = None
    ) -> dict[str, Any]:
        """One search's every stage, candidates and timings (see ``knowhub.query.debug``)."""
        app, request = self.runtime, self._request(query, top_k, filters, None)
        report = diagnose(app.store, self.embedder, self.search_settings, request, app.reranker)
        report["collection"] = self.name
        for hit in report["hits"]:
            hit["collection"] = self.name
        return report

    def _request(
        self, query: str, top_k: int | None, filters: Filters | None, min_score: float | None
    ) -> SearchRequest:
        """A search of this version; None takes the configured ``search`` default."""
        opts = self.runtime.settings.search
        return SearchRequest(
            query=query,
            collection=self.target.physical,
            top_k=opts.top_k if top_k is None else top_k,
            filters=dict(filters or {}),
            min_score=opts.min_score if min_score is None else min_score,
            scope=self._scope,
        )

    # -- answer ------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        filters: Filters | None = None,
        history: Sequence[ChatMessage] = (),
        *,
        session_id: str | None = None,
    ) -> Iterator[AnswerEvent]:
        """Answer ``question`` as a stream of events (see :mod:`knowhub.answer.flow`),
        traced, also when it fails or the caller stops reading; ``session_id`` names the
        conversation in the trace."""
        trace, clock = new_trace("answer", self.runtime.interface, self._trace_name())
        trace.query = question.strip()  # the user's words, kept whole for `traces save-case`
        trace.session_id, trace.source_filter = session_id, dict(filters or {})

        def events() -> Iterator[AnswerEvent]:
            self._reads(trace)  # one version for the whole answer
            return answer(
                question,
                retrieve=lambda query, limit, ran: self._retrieve_for_answer(
                    trace, query, limit, ran
                ),
                faq=self.faq_match,
                counts=self.term_counts,
                llm=lambda: self.runtime.llm,
                options=self.runtime.settings.answer,
                filters=filters,
                history=history,
                embedder=lambda: self.embedder,
                vectors=self._vectors,
            )

        ends: list[Answer] = []

        def ended(event: AnswerEvent) -> Answer | None:
            if (end := self._noted(trace, clock, event)) is not None:
                ends.append(end)
            return end

        def emit(trace: Trace, clock: float) -> None:
            self.runtime.emit(trace, clock)  # stamps the read version's revision
            for end in ends:
                end.kb_version = trace.kb_version

        return traced_stream(trace, clock, events, ended, emit)

    def _vectors(self) -> CachedVectors:
        """This version's embedder, its vectors kept in the caches the searches use."""
        caches = self.runtime.caches
        return CachedVectors(self.embedder, caches.query_vectors, caches.sentence_vectors)

    def _noted(self, trace: Trace, clock: float, event: AnswerEvent) -> Answer | None:
        """Put ``event`` on the answer's trace; the answer, at the end (the trace is then
        written, and the answer gets its id: :func:`traced_stream`)."""
        if isinstance(event, Token) and trace.first_token_ms is None:
            trace.first_token_ms = round((time.perf_counter() - clock) * 1000.0, 3)
        if not isinstance(event, End):
            return None
        record_answer(trace, event.answer.to_dict())
        return event.answer

    def _retrieve_for_answer(
        self, trace: Trace, query: str, limit: int, filters: Filters
    ) -> Retrieved:
        """One of the answer's searches, its filters and cache outcomes on the trace (a
        miss stays a miss: the answer was not wholly served from the cache)."""
        result = self.retrieve(query, limit, filters)
        self._ran(trace, filters)
        for name, state in result.cache.items():
            if trace.cache.get(name) != "miss":
                trace.cache[name] = state
        return result.hits, result.timings_ms

    # -- documents ---------------------------------------------------------------------

    def ingest(
        self,
        paths: Sequence[Path],
        tags: Mapping[str, str] | None = None,
        include: Sequence[str] = (),
        exclude: Sequence[str] | None = None,
        prune: bool = False,
        progress: Progress | None = None,
        *,
        confine: Path | None = None,
        prune_renamed: bool = False,
        origin: Origin | None = None,
    ) -> IngestReport:
        """Bring this version in line with ``paths``, embedded and chunked as it was built;
        with ``confine``, only files resolving inside that folder (a served folder: symlinks
        leading out are skipped); with ``prune_renamed``, a prune also removes the vanished
        documents of a folder renamed into ``paths``; with ``origin``, a mirror's files take
        their sources from it (:mod:`knowhub.ingest.origin`). An unnamed handle ingests into
        the writers' default (:meth:`_written`); a read-only caller is refused; one change of
        the knowledge base at a time (``Runtime.writing``)."""
        from knowhub.ingest.pipeline import IngestCancelledError, IngestStopped, ingest
        from knowhub.ingest.transforms import transforms_wanted

        self.caller.check_write("ingest")
        name, where = self._written()
        if prune:
            self._unrestricted("pruning", "it would remove documents the caller does not see")
        with (
            self.runtime.writing,
            self.runtime.traced("ingest", name, preview(" ".join(map(str, paths)))) as trace,
        ):
            where._reads(trace)
            target = where.target
            try:
                report = ingest(
                    self.runtime.store,
                    where.embedder,
                    where.settings,
                    paths,
                    target.physical,
                    tags=tags,
                    include=include,
                    exclude=exclude,
                    prune=prune,
                    progress=progress,
                    confine=confine,
                    prune_renamed=prune_renamed,
                    origin=origin,
                    # Built only when wanted: an LLM configured for answers must not be
                    # required (nor checked) to ingest.
                    llm=self.runtime.llm if transforms_wanted(where.settings) else None,
                    scope=self._scope,
                )
            except (IngestStopped, IngestCancelledError) as stopped:
                stopped.report.collection = target.collection
                record_ingest(trace, stopped.report)  # the trace is written as the block exits
                trace.error = str(stopped)
                raise
            report.collection = target.collection
            record_ingest(trace, report)
            recalibrate(self.runtime.store, target.physical, where.embedder)
            where.__dict__.pop("embedder", None)  # its next search sees the range measured
        return report

    def ingest_source(
        self,
        source: RemoteSource,
        tags: Mapping[str, str] | None = None,
        progress: Progress | None = None,
        note: SourceNote | None = None,
    ) -> IngestReport:
        """Fetch a website or repository into its mirror and bring this version in line with
        it, pruned (:mod:`knowhub.ingest.remote`). Refused before anything is fetched to a
        read-only caller, one with a data scope, and a repository to a limited one."""
        from knowhub.ingest.remote import ingest_remote

        self.caller.check_write("ingest")
        self._unrestricted("ingesting a website or repository", "its gone pages are pruned")
        self.caller.check_reach(source.spec, source.local_reach)
        _, where = self._written()  # the mirror holds what the source keeps: no file globs
        mirror = functools.partial(self.ingest, tags=tags, include=["*"], exclude=[], prune=True)
        return ingest_remote(source, where.settings, mirror, progress, note)

    def _written(self) -> tuple[str, Collection]:
        """The collection an ingest through this handle writes to, and its handle: an
        unnamed handle reads the default collection but ingests into the writers' default
        (the configured one: an ingest never adds to a collection it guessed)."""
        if self._requested:  # checked as the handle's target is, before any lock or trace
            return checked_name(self.runtime, self.caller, self._requested), self
        name = checked_name(self.runtime, self.caller, None, writing=True)
        return name, Collection(self.runtime, self.caller, name, self._version)

    def failed_files(self) -> list[FailedFile]:
        """Files that failed to load into the collection :meth:`ingest` writes to, not read
        again until they or the settings change (``knowhub ingest --failed``)."""
        from knowhub.ingest.deadletters import failed_files

        self._unrestricted("listing the files that failed", "a failed file has no scope")
        _, where = self._written()
        cid = self.runtime.store.collection_id(where.target.physical)
        return [] if cid is None else failed_files(self.runtime.store, cid)

    def documents(self) -> list[DocumentRecord]:
        """The documents of this version the caller's data scope sees."""
        records = self.runtime.store.records(self.store_id())
        return [replace(r, collection=self.name) for r in records if self._sees(r)]

    def document(self, doc_hash: str) -> DocumentRecord:
        """The document whose content hash is or starts with ``doc_hash`` (8+ characters)."""
        key = check_text(doc_hash, "doc_hash").strip().lower()
        if len(key) < 8:
            raise QueryError(
                f"doc hash {doc_hash!r} is too short: give at least 8 characters of the "
                "source hash shown in search results"
            )
        found = [r for r in self.documents() if r.doc_hash.startswith(key)]
        if len(found) != 1:
            problem = "no document" if not found else f"{len(found)} documents"
            raise QueryError(
                f"{problem} with hash {doc_hash!r} in collection {self.name!r}: "
                "copy doc_hash from a search hit"
            )
        return found[0]

    def chunk(self, chunk_id: str) -> list[Hit]:
        """The chunk with this id in this version (none: an empty list)."""
        found = self.runtime.store.chunks_by_id(chunk_id.strip())
        scope, physical = self._scope, self.target.physical
        mine = [
            h for h in found if h.collection == physical and scope.admits(chunk_scope(h.metadata))
        ]
        return named(mine, self.target)

    def document_chunks(self, record: DocumentRecord) -> list[Hit]:
        """The chunks of ``record`` (from :meth:`document`) in the order they were written."""
        store = self.runtime.store
        if not self._sees(record):
            return []
        rows = [
            i for i, src in store.chunk_sources(self.store_id()).items() if src == record.source
        ]
        hits = store.hits(rows)
        ordered = [hits[i] for i in sorted(hits) if hits[i].doc_hash == record.doc_hash]
        return named(ordered, self.target)

    def remove(self, key: str, *, all_matches: bool = False) -> list[DocumentRecord]:
        """Remove the documents ``key`` names: by path (as given or as stored) or source,
        else by doc-hash prefix (hex, 8+ digits). When several match, none is removed (the
        error lists them) unless ``all_matches``."""
        self.caller.check_write("remove documents")
        cid, name = self.store_id(), self.name
        found = self._documents_named(cid, key)
        if not all(self._may_change(r) for r in found):  # seen, but not the caller's alone
            raise QueryError(
                f"no document {key!r} in collection {name!r} that this token may remove: its "
                "data scope is wider than the token's"
            )
        if len(found) > 1 and not all_matches:
            listing = "".join(f"\n  {r.source}  {r.doc_hash}" for r in found)
            raise QueryError(
                f"{key!r} matches {len(found)} documents in collection {name!r}, so none was "
                "removed: give more of the doc hash, or --all-matches to remove them all:" + listing
            )
        with self.runtime.writing:
            for record in found:
                self.runtime.store.remove_document(cid, record.path)
        return [replace(r, collection=name) for r in found]

    def _documents_named(self, cid: int, key: str) -> list[DocumentRecord]:
        """By path or source first (an archive's: its members'); only a key that is none of
        these is a hash prefix.
        Paths are stored with undecodable name bytes escaped, so is the key."""
        store, name = self.runtime.store, self.name
        stored = escape_surrogates(key)
        absolute = escape_surrogates(str(Path(key).absolute()))
        found = store.find_records(cid, stored) or store.find_records(cid, absolute)
        if not found:  # an archive or mail file: the documents of its members
            inside = (stored + MEMBER_SEPARATOR, absolute + MEMBER_SEPARATOR)
            found = [
                r
                for r in store.records(cid)
                if r.source.startswith(inside) or r.path.startswith(inside)
            ]
        found = [r for r in found if self._sees(r)]
        if found:
            return found
        try:
            prefix = check_doc_hash_prefix(stored, "path_or_doc_hash")
        except QueryError as exc:
            raise QueryError(
                f"no document with path or source {key!r} in collection {name!r}; {exc}"
            ) from exc
        found = [r for r in store.find_by_hash_prefix(cid, prefix) if self._sees(r)]
        if not found:
            raise QueryError(
                f"no document {key!r} in collection {name!r}: give a path, or a doc hash as "
                "listed by `knowhub docs`"
            )
        return found

    # -- FAQ ---------------------------------------------------------------------------

    def faq(self) -> list[FaqEntry]:
        """The FAQ entries, to a scope that sees documents without scope attributes: entries
        have none of their own, so they are treated as such a document."""
        cid = self.store_id()
        return self.runtime.store.faq(cid) if self._scope.admits(DocumentScope()) else []

    def faq_import(self, paths: Sequence[Path]) -> list[tuple[str, int]]:
        """Load FAQ files (each file's entries replace its old ones); all load or none."""
        from knowhub.ingest.faq import load_faq

        self.caller.check_write("import FAQ entries")
        self._unrestricted("importing FAQ entries", "they are answered to every caller")
        cid = self.store_id()  # entries join documents: never a new, empty collection
        limit = self.runtime.settings.ingest.max_file_bytes
        loaded = [(path.resolve(), load_faq(path, limit)) for path in paths]
        with self.runtime.writing:
            for path, pairs in loaded:
                self.put_faq(cid, str(path), [(p.question, p.answer, p.line) for p in pairs])
        return [(str(path), len(pairs)) for path, pairs in loaded]

    def put_faq(self, cid: int, source: str, pairs: Sequence[tuple[str, str, int]]) -> None:
        """Replace ``source``'s entries with ``pairs`` (question, answer, line), embedded as
        queries: a user's question is compared with them as query to query."""
        self.caller.check_write("import FAQ entries")
        vectors = np.stack([self.embedder.embed_query(question) for question, _, _ in pairs])
        with self.runtime.writing:
            self.runtime.store.replace_faq(cid, source, list(pairs), vectors)

    def faq_remove(self, source: str) -> int:
        self.caller.check_write("remove FAQ entries")
        self._unrestricted("removing FAQ entries", "they are answered to every caller")
        with self.runtime.writing:
            removed = self.runtime.store.remove_faq(self.store_id(), str(Path(source).resolve()))
        if not removed:
            raise QueryError(
                f"no FAQ entries from {source!r}: give the file as imported "
                "(see `knowhub faq list`)"
            )
        return removed

    def faq_match(self, question: str) -> FaqMatch | None:
        """The FAQ entry that answers ``question``, if one is close enough."""
        store, opts = self.runtime.store, self.runtime.settings.faq
        cid = store.collection_id(self.target.physical)
        seen = self._scope.admits(DocumentScope())  # as faq(): entries carry no scope
        entries = store.faq(cid) if opts.enabled and cid is not None and seen else []
        if not entries:
            return None
        key = (self.embedder.model_id, question.strip())
        vector = self.runtime.caches.query_vectors.get(key)
        if vector is None:
            vector = self.embedder.embed_query(question.strip())
            self.runtime.caches.query_vectors.put(key, vector)  # the search reuses it
        return match_faq(question, entries, vector, opts.word_threshold, opts.meaning_threshold)

    # -- bundles -----------------------------------------------------------------------

    def export(self, out: Path) -> BundleStats:
        """Write this version to a portable JSONL bundle (see ``knowhub.ingest.bundle``)."""
        from knowhub.ingest.bundle import export_bundle

        self.store_id()  # an unknown collection is an error
        self._unrestricted("exporting", "a bundle holds every document")
        pictures = image_store(self.runtime.settings.data_dir)
        return export_bundle(self.runtime.store, self.target.physical, out, pictures)

    def _unrestricted(self, what: str, why: str) -> None:
        """Refuse ``what`` to a caller with a data scope: ``why`` it concerns every scope."""
        if not self._scope.unrestricted:
            raise AuthError(
                f"{what} in collection {self.name!r} needs an unrestricted data scope: {why} "
                "(use a token without tenants, datasets, roles or max_visibility limits)"
            )

    def import_bundle(self, path: Path) -> BundleStats:
        """Load a bundle into this version; it must have been built with its embedder."""
        from knowhub.ingest.bundle import import_bundle

        self.caller.check_write("import bundles")
        self._unrestricted("importing", "a bundle's documents keep their own scopes")
        model = (self.embedder.model_id, self.embedder.dim)
        pictures = image_store(self.runtime.settings.data_dir)
        with self.runtime.writing:
            return import_bundle(self.runtime.store, path, model, self.target.physical, pictures)
