"""``build_app(settings)``: the one place providers are constructed.

Interfaces (CLI, MCP, HTTP) hold an :class:`App` and call its methods; they
never build providers or touch the store themselves.
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

import numpy as np

from knowhub import registry
from knowhub.answer.faq import FaqMatch, match_faq
from knowhub.answer.pipeline import Answer, Event, answer_events
from knowhub.answer.prompt import rewrite_messages
from knowhub.answer.router import route
from knowhub.config import Settings
from knowhub.default_collection import default_collection
from knowhub.errors import ConfigError, KnowhubError, QueryError, StoreError
from knowhub.lang import detect_language
from knowhub.models import DocumentRecord, Filters, Hit
from knowhub.providers.embedders.base import Embedder
from knowhub.providers.llms.base import LLM, ChatMessage
from knowhub.providers.rerankers.base import Reranker
from knowhub.providers.stores.base import FaqEntry, Store
from knowhub.query.cache import SearchCaches
from knowhub.query.debug import diagnose
from knowhub.query.pipeline import SearchRequest, SearchResult, StageHook, search
from knowhub.query.rerank import RerankStage
from knowhub.surrogates import escape_surrogates
from knowhub.trace.build import record_answer, record_ingest, record_search
from knowhub.trace.jsonl import read_traces
from knowhub.trace.record import Trace, new_trace, preview
from knowhub.trace.tracer import Tracer, build_tracer
from knowhub.validate import (
    check_collection_name,
    check_doc_hash_prefix,
    check_query,
    check_text,
    logical_name,
)
from knowhub.versions import (
    CollectionView,
    Target,
    collection_views,
    embedder_spec,
    resolve_target,
    target_settings,
)

if TYPE_CHECKING:  # imported where used: a search or MCP `tools/list` never loads ingest
    from knowhub.ingest.bundle import BundleStats
    from knowhub.ingest.pipeline import IngestReport, Progress
    from knowhub.ingest.verify import VerifyReport

__all__ = ["App", "build_app"]


class App:
    """Ingest, search and inspect one data directory."""

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

    # -- versions: what a request on a collection reads (see knowhub.versions)

    def resolve(self, collection: str | None = None, version: int | None = None) -> Target:
        """The version a request on ``collection`` uses: the active one, read now (so an
        activation applies from the next request on), or version ``version``."""
        name = check_collection_name(collection or default_collection(self.store, self.settings))
        return resolve_target(self.store, name, version)

    def embedder_for(self, target: Target) -> Embedder:
        """The embedder ``target``'s version was built with."""
        return self.embedder_with(self.settings_for(target))

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

    def settings_for(self, target: Target) -> Settings:
        """The settings with ``target``'s embedder and chunking (what ingest into it uses)."""
        return target_settings(self.store, self.settings, target)

    def _reads(self, trace: Trace, collection: str | None, version: int | None = None) -> Target:
        target = self.resolve(collection, version)
        trace.collection, trace.kb_version = target.collection, target.describe()
        return target

    def ask(
        self,
        question: str,
        collection: str | None = None,
        filters: Filters | None = None,
        history: Sequence[ChatMessage] = (),
    ) -> Iterator[Event]:
        """Answer ``question`` from the collection as a stream of events (see ``knowhub.answer``).

        Routing runs first (a greeting is answered without searching); with history and an
        LLM, a follow-up is rewritten into a standalone query before retrieval. The run is
        traced, also when it fails or the caller stops reading.
        """
        name = collection or self.settings.collection
        trace, clock = new_trace("answer", self.interface, name)
        trace.query = question.strip()  # the user's words, kept whole for `traces save-case`
        try:
            # One version for the whole answer, even if another is activated meanwhile.
            target = self._reads(trace, collection)
            for kind, payload in self._ask(question, target, filters, history):
                if kind == "end":
                    record_answer(trace, payload)
                yield kind, payload
        except KnowhubError as exc:
            trace.error = str(exc)
            raise
        except GeneratorExit:
            trace.notes.append("the caller stopped reading before the end")
            raise
        finally:
            self._emit(trace, clock)

    def _ask(
        self,
        question: str,
        target: Target,
        filters: Filters | None,
        history: Sequence[ChatMessage],
    ) -> Iterator[Event]:
        check_query(question, "question")
        opts = self.settings.answer
        language = detect_language(question)
        found = route(question, self.llm if opts.llm_router else None)
        yield "stage", {"stage": "routing", "ms": round(found.ms, 3), **found.to_dict()}
        notes = [found.note] if found.note else []
        if found.intent == "chat":
            yield "token", {"text": found.reply or ""}
            chat = Answer(
                question,
                question,
                found.reply or "",
                "chat",
                [],
                0.0,
                1.0,
                intent="chat",
                model="rules",
            )
            yield "end", {**chat.to_dict(), "route": found.to_dict()}
            return
        faq = self._faq_match(question, target)
        if faq is not None:
            yield "stage", {"stage": "faq", "hits": 1, **faq.to_dict()}
            yield "token", {"text": faq.entry.answer}
            direct = Answer(
                question,
                question,
                faq.entry.answer,
                "faq_direct",
                [],
                faq.similarity,
                faq.similarity,
                model="faq",
            )
            direct.notes.append(
                f"FAQ match ({faq.by}, {faq.similarity:.2f}) on {faq.entry.question!r} from "
                f"{Path(faq.entry.source).name}:{faq.entry.line}"
            )
            yield "end", {**direct.to_dict(), "faq": faq.to_dict(), "route": found.to_dict()}
            return
        query = question
        if history and self.llm is not None and opts.rewrite_followups:
            query, note = _standalone(self.llm, question, history)
            notes += [note] if note else []
        scope = {**dict(filters or {}), **found.filters}
        queries = found.queries if found.intent == "compare" else [query]

        def retrieve(text: str) -> tuple[list[Hit], dict[str, float]]:
            results = [self._search(target, q, opts.max_sources, scope) for q in queries]
            if len(results) == 1:
                return results[0].hits, results[0].timings_ms
            return _interleave([r.hits for r in results], opts.max_sources), {}

        events = answer_events(
            question, retrieve, self.llm, opts, query=query, language=language, history=history
        )
        for kind, payload in events:
            if kind == "end":
                payload["intent"] = found.intent
                payload["route"] = found.to_dict()
                payload["notes"] = notes + payload["notes"]
                payload["timings_ms"]["routing"] = round(found.ms, 3)
            yield kind, payload

    def faq_import(
        self, paths: Sequence[Path], collection: str | None = None
    ) -> list[tuple[str, int]]:
        """Load FAQ files into the collection (each file's entries replace its old ones)."""
        from knowhub.ingest.faq import load_faq

        target, cid = self.locate(collection)  # entries join documents: never a new, empty one
        embedder = self.embedder_for(target)
        limit = self.settings.ingest.max_file_bytes
        loaded = [(path.resolve(), load_faq(path, limit)) for path in paths]  # all or none load
        done = []
        for path, pairs in loaded:
            # Embedded as queries: a user's question is compared with them as query to query.
            vectors = np.stack([embedder.embed_query(p.question) for p in pairs])
            self.store.replace_faq(
                cid, str(path), [(p.question, p.answer, p.line) for p in pairs], vectors
            )
            done.append((str(path), len(pairs)))
        return done

    def faq(self, collection: str | None = None) -> list[FaqEntry]:
        return self.store.faq(self.locate(collection)[1])

    def faq_remove(self, source: str, collection: str | None = None) -> int:
        removed = self.store.remove_faq(self.locate(collection)[1], str(Path(source).resolve()))
        if not removed:
            raise QueryError(
                f"no FAQ entries from {source!r}: give the file as imported "
                "(see `knowhub faq list`)"
            )
        return removed

    def _faq_match(self, question: str, target: Target) -> FaqMatch | None:
        opts = self.settings.faq
        cid = self.store.collection_id(target.physical)
        entries = self.store.faq(cid) if opts.enabled and cid is not None else []
        if not entries:
            return None
        embedder = self.embedder_for(target)
        key = (embedder.model_id, question.strip())
        vector = self.caches.query_vectors.get(key)
        if vector is None:
            vector = embedder.embed_query(question.strip())
            self.caches.query_vectors.put(key, vector)  # the search reuses it
        return match_faq(question, entries, vector, opts.word_threshold, opts.meaning_threshold)

    def traces(self) -> Iterator[Trace]:
        """Every recorded trace of this data dir, oldest first."""
        return read_traces(Path(self.settings.data_dir) / "traces")

    @contextmanager
    def _traced(self, kind: str, collection: str, query: str | None) -> Iterator[Trace]:
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
            self._emit(trace, clock)

    def _emit(self, trace: Trace, clock: float) -> None:
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
        prune_outside: bool = False,
    ) -> IngestReport:
        """Bring the collection's active version (or ``version``) in line with ``paths``,
        embedded and chunked as that version was built; with ``confine``, only files
        resolving inside that folder (a served folder: symlinks leading out are skipped);
        with ``prune_outside``, a prune removes vanished documents wherever they were."""
        from knowhub.ingest.pipeline import IngestCancelledError, IngestStopped, ingest

        name = check_collection_name(collection or self.settings.collection)
        with self._traced("ingest", name, preview(" ".join(str(p) for p in paths))) as trace:
            target = self._reads(trace, name, version)
            try:
                report = ingest(
                    self.store,
                    self.embedder_for(target),
                    self.settings_for(target),
                    paths,
                    target.physical,
                    tags=tags,
                    include=include,
                    exclude=exclude,
                    prune=prune,
                    progress=progress,
                    confine=confine,
                    prune_outside=prune_outside,
                )
            except (IngestStopped, IngestCancelledError) as stopped:
                stopped.report.collection = target.collection
                record_ingest(trace, stopped.report)  # the trace is written as the block exits
                trace.error = str(stopped)
                raise
            report.collection = target.collection
            record_ingest(trace, report)
        return report

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
        name = collection or self.settings.collection
        with self._traced("search", name, query.strip()) as trace:
            target = self._reads(trace, collection, version)
            result = self._search(target, query, top_k, filters, min_score, on_stage)
            record_search(trace, result.timings_ms, result.counts, result.cache, result.hits)
        return result

    def _search(
        self,
        target: Target,
        query: str,
        top_k: int | None = None,
        filters: Filters | None = None,
        min_score: float | None = None,
        on_stage: StageHook | None = None,
    ) -> SearchResult:
        opts = self.settings.search
        request = SearchRequest(
            query=query,
            collection=target.physical,
            top_k=opts.top_k if top_k is None else top_k,
            filters=dict(filters or {}),
            min_score=opts.min_score if min_score is None else min_score,
        )
        result = search(
            self.store,
            self.embedder_for(target),
            opts,
            request,
            self.reranker,
            self.caches,
            on_stage,
        )
        return replace(result, hits=_named(result.hits, target))

    def debug_search(
        self,
        query: str,
        collection: str | None = None,
        top_k: int | None = None,
        filters: Filters | None = None,
    ) -> dict[str, Any]:
        """One search's every stage, candidates and timings (see ``knowhub.query.debug``)."""
        target = self.resolve(collection)
        request = SearchRequest(
            query=query,
            collection=target.physical,
            top_k=self.settings.search.top_k if top_k is None else top_k,
            filters=dict(filters or {}),
            min_score=self.settings.search.min_score,
        )
        embedder = self.embedder_for(target)
        report = diagnose(self.store, embedder, self.settings.search, request, self.reranker)
        report["collection"] = target.collection
        for hit in report["hits"]:
            hit["collection"] = target.collection
        return report

    def collections(self) -> list[CollectionView]:
        """Each collection once, under its own name, as its active version holds it."""
        return collection_views(self.store)

    def documents(
        self, collection: str | None = None, *, version: int | None = None
    ) -> list[DocumentRecord]:
        target, cid = self.locate(collection, version)
        return [replace(r, collection=target.collection) for r in self.store.records(cid)]

    def document(self, doc_hash: str, collection: str | None = None) -> DocumentRecord:
        """The document whose content hash is or starts with ``doc_hash`` (8+ characters)."""
        key = check_text(doc_hash, "doc_hash").strip().lower()
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
        """The chunk with this id in the active version of its collection."""
        targets: dict[str, Target] = {}
        found = []
        for hit in self.store.chunks_by_id(check_text(chunk_id, "chunk_id").strip()):
            name = logical_name(hit.collection)
            target = targets.setdefault(name, resolve_target(self.store, name))
            if target.physical == hit.collection:
                found += _named([hit], target)
        if not found:
            raise QueryError(f"no chunk with id {chunk_id!r}: copy a chunk_id from a search result")
        return found

    def document_chunks(self, record: DocumentRecord) -> list[Hit]:
        """The chunks of ``record`` (from :meth:`document`) in the order they were written."""
        target, cid = self.locate(record.collection)
        rows = [i for i, source in self.store.chunk_sources(cid).items() if source == record.source]
        hits = self.store.hits(rows)
        return _named(
            [hits[i] for i in sorted(hits) if hits[i].doc_hash == record.doc_hash], target
        )

    def remove(
        self, key: str, collection: str | None = None, *, all_matches: bool = False
    ) -> list[DocumentRecord]:
        """Remove the documents ``key`` names from the collection's active version: by path
        (as given or as stored) or source, else by doc-hash prefix (hex, 8+ digits). When
        several match, none is removed (the error lists them) unless ``all_matches``."""
        target, cid = self.locate(collection)
        name = target.collection
        found = self._documents_named(cid, key, name)
        if len(found) > 1 and not all_matches:
            listing = "".join(f"\n  {r.source}  {r.doc_hash}" for r in found)
            raise QueryError(
                f"{key!r} matches {len(found)} documents in collection {name!r}, so none was "
                "removed: give more of the doc hash, or --all-matches to remove them all:" + listing
            )
        for record in found:
            self.store.remove_document(cid, record.path)
        return [replace(r, collection=name) for r in found]

    def _documents_named(self, cid: int, key: str, name: str) -> list[DocumentRecord]:
        """By path or source first; only a key that is none of these is a hash prefix.
        Paths are stored with undecodable name bytes escaped, so is the key."""
        stored = escape_surrogates(key)
        absolute = escape_surrogates(str(Path(key).absolute()))
        found = self.store.find_records(cid, stored) or self.store.find_records(cid, absolute)
        if found:
            return found
        try:
            prefix = check_doc_hash_prefix(stored, "path_or_doc_hash")
        except QueryError as exc:
            raise QueryError(
                f"no document with path or source {key!r} in collection {name!r}; {exc}"
            ) from exc
        found = self.store.find_by_hash_prefix(cid, prefix)
        if not found:
            raise QueryError(
                f"no document {key!r} in collection {name!r}: give a path, or a doc hash as "
                "listed by `knowhub docs`"
            )
        return found

    def verify(self, collection: str | None = None, fix: bool = False) -> VerifyReport:
        """Check that the index matches its files (every collection unless one is named);
        ``fix`` repairs what it can (re-ingest, remove, delete orphans), then checks again."""
        from knowhub.ingest.verify import verify_index

        if collection is not None:
            self.locate(collection)  # an unknown name is an error, not "all fine"
        names = [collection] if collection else [c.name for c in self.collections()]
        targets = {t.physical: t for t in map(self.resolve, names)}  # each active version
        embedders = {}
        for physical, target in targets.items():
            embedder = self.embedder_for(target)
            embedders[physical] = (embedder.model_id, embedder.dim)

        def reingest(
            paths: Sequence[Path], name: str, tags: Mapping[str, str], include: Sequence[str]
        ) -> IngestReport:
            target = targets[name]
            return self.ingest(
                paths, target.collection, tags, include=include, exclude=[], version=target.number
            )

        return verify_index(self.store, embedders, reingest if fix else None)

    def export(self, out: Path, collection: str | None = None) -> BundleStats:
        """Write the collection's active version to a portable JSONL bundle (see
        ``knowhub.ingest.bundle``)."""
        from knowhub.ingest.bundle import export_bundle

        target, _ = self.locate(collection)
        return export_bundle(self.store, target.physical, out)

    def import_bundle(self, path: Path, collection: str | None = None) -> BundleStats:
        """Load a bundle into ``collection``'s active version (default: the collection it
        was exported from); it must have been built with that version's embedder."""
        from knowhub.ingest.bundle import bundle_collection, import_bundle

        target = self.resolve(collection or bundle_collection(path))
        embedder = self.embedder_for(target)
        return import_bundle(self.store, path, (embedder.model_id, embedder.dim), target.physical)

    def locate(self, collection: str | None, version: int | None = None) -> tuple[Target, int]:
        """The version a request reads and its store id; an unknown collection is an error."""
        target = self.resolve(collection, version)
        cid = self.store.collection_id(target.physical)
        if cid is None:
            known = ", ".join(c.name for c in self.collections()) or "none yet"
            raise StoreError(
                f"unknown collection {target.collection!r} (known: {known}); ingest into it first"
            )
        return target, cid


def _named(hits: list[Hit], target: Target) -> list[Hit]:
    """``hits`` under their collection's name (the store names a version n >= 2 "C@vN")."""
    if target.physical == target.collection:
        return hits
    return [replace(hit, collection=target.collection) for hit in hits]


def _standalone(llm: LLM, question: str, history: Sequence[ChatMessage]) -> tuple[str, str | None]:
    """The follow-up as a standalone query (the question itself if rewriting fails)."""
    try:
        messages = rewrite_messages(question, history)
        rewritten = llm.complete(messages, max_tokens=100, temperature=0.0).strip()
    except KnowhubError as exc:
        return question, f"follow-up rewrite failed, searching the question as asked: {exc}"
    if not rewritten or len(rewritten.encode()) > 4096:
        return question, "follow-up rewrite gave nothing usable; searching the question"
    return rewritten, None


def _interleave(rankings: list[list[Hit]], limit: int) -> list[Hit]:
    """Merge sub-query results turn by turn (each sub-query's best first), without repeats."""
    merged: dict[str, Hit] = {}
    for rank in range(max((len(r) for r in rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                merged.setdefault(ranking[rank].chunk_id, ranking[rank])
    return list(merged.values())[:limit]


def build_app(settings: Settings, interface: str = "python") -> App:
    """Create the application object for ``settings`` (providers load lazily)."""
    return App(settings, interface=interface)
