"""The ingest pipeline: discover → integrity → load → chunk → encode → store.

Each document is written in one store transaction, so a run killed at any
moment leaves every document either as it was or fully replaced. A failing
file is reported and skipped; it never stops the others.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config import Settings
from knowhub.errors import KnowhubError, LoaderError
from knowhub.ingest.chunk import ChunkingOptions, chunk_document
from knowhub.ingest.discover import Candidate, discover
from knowhub.ingest.embed import EmbedRunner, cache_key, gather
from knowhub.ingest.loaders import SUPPORTED_EXTENSIONS, load
from knowhub.lang import index_tokens
from knowhub.models import Chunk, DocumentRecord
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.stores.base import Store

__all__ = ["IngestReport", "Progress", "contextual_text", "ingest"]

Progress = Callable[[int, int, str], None]
"""Called as ``progress(done, total, current_source)``."""


@dataclass
class IngestReport:
    """What one run did, per file."""

    collection: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    cached: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "chunks": self.chunks,
            "embedded": self.embedded,
            "cached": self.cached,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Pending:
    """A loaded and chunked document waiting for its vectors."""

    record: DocumentRecord
    chunks: list[Chunk]
    texts: list[str]
    keys: list[str]
    cached: dict[str, Vectors]
    futures: list[Future[Vectors]]
    missing: list[int]
    is_update: bool


def contextual_text(chunk: Chunk) -> str:
    """The text embedded and indexed for a chunk: its section path, then its text.

    The heading chain gives a chunk from deep inside a section the context its
    own words lack; it is left out when the chunk already starts with it.
    """
    if chunk.section_path and not chunk.text.lstrip().startswith("#"):
        return f"{chunk.section_path}\n{chunk.text}"
    return chunk.text


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
) -> IngestReport:
    """Bring ``collection`` in line with the files under ``paths``."""
    run = _Run(store, embedder, settings, collection, dict(tags or {}))
    started = time.perf_counter()
    exclusions = settings.ingest.exclude if exclude is None else exclude
    candidates, missing = _collect(paths, include or settings.ingest.include, exclusions)
    for root, reason in missing:
        run.report.failed.append((root, reason))
    try:
        for done, candidate in enumerate(candidates, start=1):
            run.process(candidate)
            if progress is not None:
                progress(done, len(candidates), candidate.source)
        run.flush_all()
    finally:
        run.runner.close()
    if prune:
        run.prune(paths)
    run.report.embedded = run.runner.embedded
    run.report.seconds = time.perf_counter() - started
    return run.report


def _collect(
    paths: Sequence[Path], include: Sequence[str], exclude: Sequence[str]
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    candidates: list[Candidate] = []
    missing: list[tuple[str, str]] = []
    for root in paths:
        try:
            candidates.extend(discover([root], include, exclude))
        except FileNotFoundError as exc:
            missing.append((str(root), f"{exc}: check the path"))
    return candidates, missing


class _Run:
    """State of one ingest run (kept off the public API)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: Settings,
        collection: str,
        tags: dict[str, str],
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.tags = tags
        self.cid = store.ensure_collection(collection, embedder.model_id, embedder.dim)
        self.report = IngestReport(collection)
        self.runner = EmbedRunner(embedder, settings)
        self.options = ChunkingOptions(
            settings.chunking.size, settings.chunking.overlap, settings.chunking.unit
        )
        self.window: deque[_Pending] = deque()
        # Documents in flight: enough to keep every worker busy, few enough to bound memory.
        self.max_window = 2 * max(1, settings.embedder.workers or (os.cpu_count() or 1)) + 2

    def process(self, candidate: Candidate) -> None:
        try:
            pending = self._prepare(candidate)
        except (KnowhubError, OSError) as exc:
            self.report.failed.append((candidate.source, _reason(exc)))
            return
        except Exception as exc:  # one bad file must never stop the run
            self.report.failed.append(
                (candidate.source, f"unexpected {type(exc).__name__}: {exc} (please report)")
            )
            return
        if pending is None:
            return
        self.window.append(pending)
        while len(self.window) >= self.max_window:
            self._write(self.window.popleft())

    def flush_all(self) -> None:
        while self.window:
            self._write(self.window.popleft())

    def _prepare(self, candidate: Candidate) -> _Pending | None:
        path = Path(candidate.path)
        if candidate.explicit and path.suffix.lower() not in SUPPORTED_EXTENSIONS:
            raise LoaderError(
                f"{candidate.source}: unsupported file type {path.suffix or '(none)'}; "
                f"supported: {' '.join(sorted(SUPPORTED_EXTENSIONS))}"
            )
        stat = path.stat()
        old = self.store.record(self.cid, candidate.path)
        same_tags = old is not None and old.metadata.get("tags", {}) == self.tags
        if old and same_tags and (old.size, old.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
            self.report.unchanged.append(candidate.source)  # fast path: contents not read
            return None
        limit = self.settings.ingest.max_file_mb * 1024 * 1024
        if stat.st_size > limit:
            raise LoaderError(
                f"{candidate.source}: {stat.st_size / 2**20:.0f} MB is over ingest.max_file_mb "
                f"({self.settings.ingest.max_file_mb:g}); raise the limit or split the file"
            )
        data = path.read_bytes()
        doc_hash = hashlib.sha256(data).hexdigest()
        if old and same_tags and old.doc_hash == doc_hash:
            self.store.touch(self.cid, candidate.path, stat.st_size, stat.st_mtime_ns)
            self.report.unchanged.append(candidate.source)
            return None
        loaded = load(path, data)
        metadata = {**_scalars(loaded.metadata), **self.tags}
        chunks = chunk_document(loaded, doc_hash, self.options, metadata)
        if not chunks:
            raise LoaderError(f"{candidate.source}: no text to index after extraction")
        record = DocumentRecord(
            collection=self.report.collection, source=candidate.source, path=candidate.path,
            doc_hash=doc_hash, size=stat.st_size, mtime_ns=stat.st_mtime_ns, title=loaded.title,
            format=loaded.format, chunk_count=len(chunks), char_count=len(loaded.text),
            pages=len(loaded.page_starts) or None,
            ingested_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            metadata={**loaded.metadata, "tags": self.tags},
        )  # fmt: skip
        return self._embed(record, chunks, is_update=old is not None)

    def _embed(self, record: DocumentRecord, chunks: list[Chunk], is_update: bool) -> _Pending:
        texts = [contextual_text(c) for c in chunks]
        keys = [cache_key(self.embedder.model_id, t) for t in texts]
        cached = self.store.cached_vectors(keys)
        missing = [i for i, k in enumerate(keys) if k not in cached]
        futures = self.runner.submit([texts[i] for i in missing])
        self.report.cached += len(chunks) - len(missing)
        return _Pending(record, chunks, texts, keys, cached, futures, missing, is_update)

    def _write(self, pending: _Pending) -> None:
        source = pending.record.source
        try:
            fresh = gather(pending.futures, self.embedder.dim)
            vectors = np.zeros((len(pending.chunks), self.embedder.dim), dtype=np.float32)
            for row, key in enumerate(pending.keys):
                if key in pending.cached:
                    vectors[row] = pending.cached[key]
            for row, vector in zip(pending.missing, fresh, strict=True):
                vectors[row] = vector
            tokens = [" ".join(index_tokens(t)) for t in pending.texts]
            self.store.replace_document(
                self.cid, pending.record, pending.chunks, vectors, tokens, pending.keys
            )
        except (KnowhubError, OSError) as exc:
            self.report.failed.append((source, _reason(exc)))
            return
        except Exception as exc:  # e.g. a crashed worker: fail this file, keep the others
            self.report.failed.append((source, f"unexpected {type(exc).__name__}: {exc}"))
            return
        (self.report.updated if pending.is_update else self.report.added).append(source)
        self.report.chunks += len(pending.chunks)

    def prune(self, roots: Sequence[Path]) -> None:
        """Remove documents under ``roots`` whose files no longer exist."""
        prefixes = [os.path.abspath(r) for r in roots]
        removed: set[str] = set()
        for record in self.store.records(self.cid):
            inside = any(
                record.path == p or record.path.startswith(p.rstrip(os.sep) + os.sep)
                for p in prefixes
            )
            if inside and not Path(record.path).exists():
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
