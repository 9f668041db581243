"""The ingest pipeline: discover → integrity → load → clean → chunk → encode → store.

Each document is written in one store transaction, so a run killed at any
moment leaves every document either as it was or fully replaced. A failing
file is reported and skipped; it never stops the others (a disk the store cannot
write to stops the run: every file after it would fail the same way).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import (
    KnowhubError,
    LoaderError,
    OcrUnavailableError,
    UnsupportedFileError,
)
from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.cleanup import clean_document
from knowhub.ingest.containers import Containers, is_document_too
from knowhub.ingest.deadletters import DeadLetters
from knowhub.ingest.discover import Candidate, Skipped, discover
from knowhub.ingest.embed import EmbedRunner, cache_key
from knowhub.ingest.extraction import Extraction, run_limits
from knowhub.ingest.identity import Identities
from knowhub.ingest.inplace import InPlace
from knowhub.ingest.integrity import Changed, Integrity, gone_documents, renamed_folders
from knowhub.ingest.loaders import READ_FORMATS, is_container, load, unsupported_reason
from knowhub.ingest.loaders.budget import Deadline
from knowhub.ingest.origin import Origin
from knowhub.ingest.pictures import image_entries
from knowhub.ingest.progress import IngestProgress, Progress, ProgressTracker
from knowhub.ingest.report import IngestReport
from knowhub.ingest.scoping import (
    HiddenDocumentError,
    WriteGuard,
    checked_scope,
    scope_stale,
    scoped_metadata,
)
from knowhub.ingest.stop_signals import stop_signals_held
from knowhub.ingest.stopping import (
    DiskTroubleError,
    IngestCancelledError,
    IngestStopped,
    ShutdownRequestedError,
    stop_if_shutting_down,
    stop_ingests,
)
from knowhub.ingest.terms import LEXICAL_VERSION, chunk_terms, lexical_stale
from knowhub.ingest.transforms import build_transforms, own_metadata, searchable_text
from knowhub.models import Chunk, DocumentRecord, LoadedDocument
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.llms.base import LLM
from knowhub.providers.stores.base import DocumentWrite, Store, refresh_index, replace_documents
from knowhub.providers.stores.disk import disk_stop, disk_trouble
from knowhub.scope import UNRESTRICTED, Scope
from knowhub.surrogates import escape_surrogates

__all__ = [
    "IngestCancelledError",
    "IngestProgress",
    "IngestReport",
    "IngestStopped",
    "Progress",
    "contextual_text",
    "ingest",
    "stop_ingests",
]

log = logging.getLogger("knowhub.ingest")


# Documents committed together (each in a savepoint of its own): a commit costs as much as
# the rest of a small document's write. Bounded in count and in time, so that progress
# and a concurrent reader see documents land while the embedder is the slow part.
_GROUP_DOCS = 64
_GROUP_S = 0.5


@dataclass
class _Pending:
    """A loaded and chunked document waiting for its vectors."""

    record: DocumentRecord
    chunks: list[Chunk]
    tokens: list[str]  # each chunk's lexical-index terms, space-separated
    keys: list[str]
    cached: dict[str, Vectors]
    futures: list[Future[Vectors]]
    missing: list[int]
    outcome: str  # added, updated, retagged or moved
    previous: DocumentRecord | None  # the document it moved from


def contextual_text(chunk: Chunk) -> str:
    """The text embedded and indexed for a chunk: its section path, then its text.

    The heading chain gives a chunk from deep inside a section the context its
    own words lack; it is left out when the chunk already starts with it. LLM transforms
    stand in for the text (:func:`~knowhub.ingest.transforms.searchable_text`).
    """
    text = searchable_text(chunk)
    if chunk.section_path and not chunk.text.lstrip().startswith("#"):
        return f"{chunk.section_path}\n{text}"
    return text


def ingest(
    store: Store,
    embedder: Embedder,
    settings: Settings,
    paths: Sequence[Path],
    collection: str,
    tags: Mapping[str, str] | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] | None = None,
    prune: bool = False,
    progress: Progress | None = None,
    confine: Path | None = None,
    prune_renamed: bool = False,
    llm: LLM | None = None,
    scope: Scope = UNRESTRICTED,
    origin: Origin | None = None,
) -> IngestReport:
    """Bring ``collection`` in line with the files under ``paths``.

    With ``confine`` (a served folder), only files resolving inside it are ingested.
    ``tags`` update each document's stored tags (an empty value removes one); documents
    keep the others. ``prune`` removes documents under ``paths`` whose files are gone; with
    ``prune_renamed`` (a served folder), also those of a folder renamed into ``paths``. ``llm`` runs
    the transforms ``ingest.transforms`` turns on. A writer of a data ``scope`` touches only
    documents it sees, and gives none a scope wider than its own. With ``origin`` (a mirrored
    website or repository), each file under its root takes its source from it.
    """
    guard = WriteGuard(scope, settings)
    exclusions = settings.ingest.exclude if exclude is None else exclude
    run = _Run(
        store, embedder, settings, collection, dict(tags or {}), confine, progress, llm, guard
    )
    run.containers.exclude = list(exclusions)  # members are excluded as the run's files are
    version = store.version(run.cid)
    started = time.perf_counter()
    candidates = _collect(
        paths, include or settings.ingest.include, exclusions, confine, run, origin
    )
    try:
        run.tracker.started(len(candidates))
        for candidate in candidates:
            stop_if_shutting_down()
            run.process(candidate)
        run.flush_all()
        run.containers.save(run.report)
        run.tracker.finished()
    except (KeyboardInterrupt, ShutdownRequestedError, DiskTroubleError) as exc:
        # Documents committed so far are whole (each in its own savepoint); those in flight
        # or not yet committed are dropped, so that a stop takes moments, not minutes (the
        # vectors their finished batches computed are cached for the next run).
        run.runner.abort()
        run.stop([c.source for c in candidates], started)
        if isinstance(exc, KeyboardInterrupt):
            raise IngestStopped(run.report) from exc
        if isinstance(exc, DiskTroubleError):
            raise IngestCancelledError(run.report, str(exc)) from exc.__cause__
        raise IngestCancelledError(run.report) from None
    finally:
        run.close()
    if prune:
        run.prune([*paths, *renamed_folders(run.moved_from)] if prune_renamed else paths)
    if store.version(run.cid) != version:
        _refreshed(store, run.cid)
    run.report.seconds = time.perf_counter() - started
    return run.report


def _refreshed(store: Store, cid: int) -> None:
    """Bring the store's derived search index up to date now, not at the next search (a new
    process then opens it from disk in moments). The documents are committed: a failure
    here costs the next search a rebuild, never the run."""
    try:
        refresh_index(store, cid)
    except (KnowhubError, OSError, sqlite3.Error, RuntimeError) as exc:
        log.warning("the search index of the collection was not refreshed: %s", exc)


def _collect(
    paths: Sequence[Path],
    include: Sequence[str],
    exclude: Sequence[str],
    confine: Path | None,
    run: _Run,
    origin: Origin | None,
) -> list[Candidate]:
    """The files to ingest; what discovery passed over goes into ``run``'s report."""
    candidates: list[Candidate] = []
    for root in paths:
        try:
            for found in discover([root], include, exclude, confine):
                if origin is not None:
                    found = replace(found, source=origin.source(found.path, found.source))
                if isinstance(found, Skipped):
                    run.pass_over(found)
                else:
                    candidates.append(found)
        except FileNotFoundError as exc:
            run.report.failed.append((str(root), f"{exc}: check the path"))
            run.report.missing.append(str(root))
    return candidates


class _Run:
    """State of one ingest run (kept off the public API)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: Settings,
        collection: str,
        tags: dict[str, str],
        confine: Path | None = None,
        progress: Progress | None = None,
        llm: LLM | None = None,
        guard: WriteGuard | None = None,
    ) -> None:
        guard = guard or WriteGuard(UNRESTRICTED, settings)
        self.transforms = build_transforms(settings, llm)
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.cid = store.ensure_collection(collection, embedder.model_id, embedder.dim)
        self.identities = Identities(store, self.cid)
        self.limits = run_limits(settings)
        self.extraction = Extraction(settings, self.limits.ocr)
        checked_scope(tags, settings)  # a bad scope tag fails the run before any file
        self.integrity = Integrity(
            store,
            self.cid,
            self.identities,
            tags,
            confine,
            self.limits.max_bytes,
            lambda old: (
                self.extraction.stale(old) or scope_stale(old, settings) or lexical_stale(old)
            ),
            guard,
        )
        self.report = IngestReport(collection)
        self.dead_letters = DeadLetters(store, self.cid, settings)
        self.containers = Containers(
            store, self.cid, settings, settings.ingest.exclude, confine, self.dead_letters
        )
        self.in_place = InPlace(
            store, self.cid, settings, tags, self.extraction, self._cache_key, guard
        )
        self.runner = EmbedRunner(embedder, settings)
        self.tracker = ProgressTracker(progress, lambda: self.runner.encoded)
        self.options = ChunkingOptions(
            settings.chunking.size, settings.chunking.overlap, settings.chunking.unit
        )
        self.passed_over: set[str] = set()  # paths discovery skipped: pruned like gone files
        self.moved_from: set[str] = set()  # the folders of the documents that moved
        self.window: deque[_Pending] = deque()
        # Documents in flight: enough to keep every worker busy, few enough to bound memory.
        self.max_window = 2 * max(1, settings.embedder.workers or (os.cpu_count() or 1)) + 2
        self.group: list[tuple[_Pending, DocumentWrite]] = []  # written, not yet committed
        self.group_started = 0.0

    def close(self) -> None:
        self.dead_letters.save()
        self.runner.close()
        if self.transforms is not None:
            self.transforms.close()

    def process(self, candidate: Candidate) -> None:
        if candidate.member is None and is_container(candidate.source):
            self.containers.expand(candidate, self)  # its members, each processed here
            if not is_document_too(candidate.source):  # a message is a document too
                return
        try:
            pending = self._prepare(candidate)
        except HiddenDocumentError:  # not the writer's to touch, nor to hear of
            pending = None
        except (OcrUnavailableError, UnsupportedFileError) as exc:
            self._not_scanned(candidate, exc)
            self._rescoped(candidate)
            pending = None
        except (KnowhubError, OSError) as exc:
            self._stop_if_disk_full(exc, writing=False)  # writing its pictures, say
            self.report.failed.append((candidate.source, _reason(exc)))
            self._rescoped(candidate)
            pending = None
        except Exception as exc:  # one bad file must never stop the run
            stop_if_shutting_down()  # then the cause was the stop (workers gone): not the file
            self.report.failed.append(
                (candidate.source, f"unexpected {type(exc).__name__}: {exc} (please report)")
            )
            pending = None
        if pending is None:  # unchanged or failed: done with it
            self.tracker.file_done(escape_surrogates(candidate.source))  # as _prepare names it
            return
        self.window.append(pending)
        while len(self.window) >= self.max_window:
            self._write(self.window.popleft())

    def _rescoped(self, candidate: Candidate) -> None:
        """After a failed re-read: the document kept still gets the run's tags and scope."""
        try:
            if self.in_place.rewrote(candidate, failed=True):
                note = "not read again; its new tags and scope were applied to what was indexed"
                self.report.warnings.append((candidate.source, f"{candidate.source}: {note}"))
        except (KnowhubError, OSError) as exc:
            self._stop_if_disk_full(exc, writing=True)  # as any other write to the store
            self.report.failed.append((candidate.source, _reason(exc)))

    def _not_scanned(
        self, candidate: Candidate, exc: OcrUnavailableError | UnsupportedFileError
    ) -> None:
        """A scan that OCR is off or not installed for, or a compressed file that holds no
        text: skipped in a folder (a folder of screenshots must not fail a run), failed when
        named; a document indexed from it before is kept, as for a file unreadable for now."""
        if candidate.explicit:
            self.report.failed.append((candidate.source, _reason(exc)))
            return
        self.report.skipped.append((candidate.source, f"{candidate.source}: {exc.problem}"))
        if isinstance(exc, UnsupportedFileError):
            self.report.unsupported.append(candidate.source)

    def pass_over(self, skipped: Skipped) -> None:
        """A file named by the caller failed; one found in a folder was skipped."""
        entry = (skipped.source, skipped.reason)
        (self.report.failed if skipped.explicit else self.report.skipped).append(entry)
        if skipped.unsupported:
            self.report.unsupported.append(skipped.source)
        if skipped.lasting:  # a file only unreadable for now keeps its document
            self.passed_over.add(escape_surrogates(skipped.path))  # as paths are stored

    def flush_all(self) -> None:
        while self.window:
            stop_if_shutting_down()
            self._write(self.window.popleft())
        self._commit_group()

    def stop(self, sources: Sequence[str], started: float) -> None:
        """Report a run interrupted before ``sources`` were all handled."""
        self.window.clear()
        self.group.clear()  # embedded but not committed: its vectors are cached below
        handled = {*self.report.current(), *(source for source, _ in self.report.failed)}
        self.report.stopped = True
        self.report.not_done = [s for s in sources if s not in handled]
        self.report.embedded += self._keep_embedded()
        self.report.seconds = time.perf_counter() - started

    def _keep_embedded(self) -> int:
        """Cache the vectors the stopped run computed and wrote in no document: the next run
        embeds only the rest. How many were kept."""
        try:
            return self.runner.keep_finished(self.store)
        except Exception as exc:  # the run is stopping: what is lost is embedded again
            log.warning("the vectors embedded before the stop were not kept: %s", exc)
            return 0

    def _prepare(self, candidate: Candidate) -> _Pending | None:
        path = Path(candidate.path)
        if candidate.explicit and (problem := unsupported_reason(path.name)):
            raise LoaderError(f"{candidate.source}: {problem}; knowhub reads {READ_FORMATS}")
        with stop_signals_held(deliver=True):  # rewritten and reported, both or neither
            if self.in_place.rewrote(candidate):  # tags or scope, scans kept as OCR read them
                self.report.retagged.append(escape_surrogates(candidate.source))
                return None
        if (held := self.dead_letters.held(candidate)) is not None:
            self.report.failed.append((escape_surrogates(candidate.source), held.skipped()))
            self._rescoped(candidate)  # as for a file failing again: the run's tags apply
            return None
        self.dead_letters.read(candidate)
        changed = self.integrity.check(candidate)
        if changed is None:
            self.report.unchanged.append(escape_surrogates(candidate.source))
            return None
        try:
            return self._chunk(path, changed)
        except LoaderError as exc:  # the file's fault: not read again until it changes
            if not isinstance(exc, OcrUnavailableError):
                self.dead_letters.failure(candidate, changed, str(exc))
            raise

    def _chunk(self, path: Path, changed: Changed) -> _Pending:
        """Load and chunk a changed file, then send its chunks to the embedder."""
        source, doc_hash, stat, tags = changed.source, changed.doc_hash, changed.stat, changed.tags
        doc_id = self._doc_id(changed.old or changed.previous, source, doc_hash)
        # Reading the file (loading, cleanup, chunking) has ingest.max_seconds_per_file;
        # its embedding, paced by the embedder and announced ahead, has no limit.
        limits = replace(self.limits, deadline=Deadline(self.settings.ingest.max_seconds_per_file))
        loaded = load(
            path,
            changed.data,
            limits,
            on_page=lambda page, pages: self.tracker.page_read(source, page, pages),
        )
        self.report.warnings += [(source, warning) for warning in loaded.warnings]
        if self.settings.ingest.cleanup:
            limits.deadline.check(path, "before its cleanup")
            loaded = clean_document(loaded)
        limits.deadline.check(path, "before its chunking")
        changed.data = b""  # only the text is needed now: free the file's bytes before chunking
        scope = checked_scope(tags, self.settings)
        metadata = scoped_metadata(_scalars(loaded.metadata), tags, scope)
        chunks = chunk_document(loaded, doc_hash, self.options, metadata, doc_id=doc_id)
        if not chunks:
            raise LoaderError(f"{source}: no text to index after extraction")
        if self.transforms is not None:
            chunks, warning = self.transforms.apply(chunks, source, self.tracker)
            self.report.warnings += [(source, warning)] if warning else []
        record = DocumentRecord(
            collection=self.report.collection,
            source=source,
            path=changed.key,
            doc_hash=doc_hash,
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            title=loaded.title,
            format=loaded.format,
            chunk_count=len(chunks),
            char_count=len(loaded.text),
            pages=len(loaded.page_starts) or None,
            ingested_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            metadata={
                **loaded.metadata,
                "tags": tags,
                "knowhub": {**self._own(doc_id, loaded, chunks), "scope": scope.to_dict()},
            },
        )
        if changed.old is None:  # another spelling of this file later in the run is it
            self.identities.remember(stat, record)
        return self._embed(record, chunks, changed.outcome, changed.previous)

    def _own(self, doc_id: str, loaded: LoadedDocument, chunks: list[Chunk]) -> dict[str, Any]:
        """The record's ``knowhub`` metadata: its id, pictures, what its extraction lacked."""
        own = {**own_metadata(chunks, doc_id), "lexical": LEXICAL_VERSION}
        if loaded.images:
            own["images"] = image_entries(loaded.images, chunks)
        if (extraction := self.extraction.record(loaded)) is not None:
            own["extraction"] = extraction
        return own

    def _cache_key(self, chunk: Chunk) -> str:
        return cache_key(self.embedder.model_id, contextual_text(chunk))

    def _doc_id(self, known: DocumentRecord | None, source: str, doc_hash: str) -> str:
        """The id of the document it was (rewritten or moved), else a new one; records from
        before ids existed get a new one, as copies of one file shared theirs."""
        if known is not None and known.own_doc_id:
            return known.own_doc_id
        return self.identities.new_id(source, doc_hash)

    def _embed(
        self,
        record: DocumentRecord,
        chunks: list[Chunk],
        outcome: str,
        previous: DocumentRecord | None,
    ) -> _Pending:
        texts = [contextual_text(c) for c in chunks]
        # Before encoding: an embedder that tokenizes the same way (hashing) then finds
        # each chunk's terms already computed (index_tokens remembers recent texts).
        tokens = [chunk_terms(record.title, c, t) for c, t in zip(chunks, texts, strict=True)]
        keys = [cache_key(self.embedder.model_id, t) for t in texts]
        cached = self.store.cached_vectors(keys)
        missing = [i for i, k in enumerate(keys) if k not in cached]
        # Before encoding, so that a file that will take long is announced.
        self.tracker.chunked(record.source, len(missing), len(chunks) - len(missing))
        futures = self.runner.submit(
            [texts[i] for i in missing], on_batch=lambda: self.tracker.embedded(record.source)
        )
        return _Pending(record, chunks, tokens, keys, cached, futures, missing, outcome, previous)

    def _write(self, pending: _Pending) -> None:
        """Queue ``pending`` for the next group commit once its vectors are in."""
        if self.group and not all(future.done() for future in pending.futures):
            self._commit_group()  # those queued need not wait for this one's embedding
        try:
            fresh = self.runner.gather(
                pending.futures, lambda: self.tracker.embedded(pending.record.source)
            )
        except (KnowhubError, OSError) as exc:
            self._failed(pending, _reason(exc))
            return
        except Exception as exc:  # e.g. a crashed worker: fail this file, keep the others
            stop_if_shutting_down()  # unless the stop killed the workers
            self._failed(pending, f"unexpected {type(exc).__name__}: {exc}")
            return
        vectors = np.zeros((len(pending.chunks), self.embedder.dim), dtype=np.float32)
        for row, key in enumerate(pending.keys):
            if key in pending.cached:
                vectors[row] = pending.cached[key]
        for row, vector in zip(pending.missing, fresh, strict=True):
            vectors[row] = vector
        previous = pending.previous.path if pending.previous else None
        write = DocumentWrite(
            pending.record, pending.chunks, vectors, pending.tokens, pending.keys, previous
        )
        if not self.group:
            self.group_started = time.perf_counter()
        self.group.append((pending, write))
        if len(self.group) >= _GROUP_DOCS or time.perf_counter() - self.group_started > _GROUP_S:
            self._commit_group()

    def _commit_group(self) -> None:
        """Write the queued documents in one commit, each still whole or not at all."""
        group, self.group = self.group, []
        if not group:
            return
        with stop_signals_held(deliver=True):  # Ctrl-C lands before the commit or after its report
            try:
                errors = replace_documents(self.store, self.cid, [write for _, write in group])
            except Exception as exc:  # the commit failed (disk full…): none of them is written
                errors = [exc] * len(group)
            for (pending, _), error in zip(group, errors, strict=True):
                if error is None:  # first: a run the disk stops below still counts them
                    self._report_written(pending)
                    self.report.chunks += len(pending.chunks)
                    self.report.embedded += len(pending.missing)  # vectors encoded and stored
                    self.report.cached += len(pending.chunks) - len(pending.missing)
                    self.runner.release(pending.futures)
                    self.tracker.file_done(pending.record.source)
        for error in errors:
            self._stop_if_disk_full(error, writing=True)
        for (pending, _), error in zip(group, errors, strict=True):
            if error is None:
                continue
            if isinstance(error, (KnowhubError, OSError)):
                self._failed(pending, _reason(error))
            else:
                self._failed(pending, f"unexpected {type(error).__name__}: {error}")

    def _stop_if_disk_full(self, exc: BaseException | None, writing: bool) -> None:
        """Stop the run when ``exc`` says the store's disk cannot be written: every file
        after would fail the same way."""
        trouble = disk_trouble(exc, writing=writing)
        if trouble is not None and exc is not None:
            where = f"the data dir {self.settings.data_dir}"
            if writing and self.settings.store.provider == "postgres":
                where = "the PostgreSQL server's disk"
            raise DiskTroubleError(disk_stop(where, trouble, exc)) from exc

    def _failed(self, pending: _Pending, reason: str) -> None:
        self.runner.release(pending.futures)
        self.report.failed.append((pending.record.source, reason))
        self.tracker.file_done(pending.record.source)

    def _report_written(self, pending: _Pending) -> None:
        source = pending.record.source
        if pending.previous is not None:
            self.report.moved.append((pending.previous.source, source))
            self.moved_from.add(pending.previous.folder)
            return
        outcomes = {
            "added": self.report.added,
            "updated": self.report.updated,
            "retagged": self.report.retagged,
        }
        outcomes[pending.outcome].append(source)

    def prune(self, roots: Sequence[Path] | None) -> None:
        """Remove documents under ``roots`` (None: anywhere) whose files are gone or now
        passed over."""
        removed: set[str] = set()
        gone = self.passed_over | self.containers.gone  # members no longer in their archive
        for record in gone_documents(self.store, self.cid, roots, gone):
            self.store.remove_document(self.cid, record.path)
            self.report.removed.append(record.source)
            removed.add(record.path)
        # A root that was itself a deleted file was reported missing; pruning answered it.
        self.report.failed = [
            (s, r) for s, r in self.report.failed if os.path.abspath(s) not in removed
        ]


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return text if isinstance(exc, KnowhubError) else f"{type(exc).__name__}: {text}"


def _scalars(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Loader metadata worth filtering on: plain scalar values only."""
    return {k: v for k, v in metadata.items() if isinstance(v, str | int | float | bool)}
