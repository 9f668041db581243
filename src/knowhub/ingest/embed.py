"""Embedding during ingest: cache lookup, then inline or worker-process encoding.

Ingest is embedder-bound (DESIGN.md: ~1–9 passages per CPU-second), so texts
whose vectors are cached are never re-encoded, and large jobs fan out to one
worker process per core, each with one thread (threads contend on 2 cores).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np

from knowhub.config import Settings
from knowhub.providers.embedders.base import Embedder, Vectors

__all__ = ["EmbedRunner", "cache_key", "gather"]

_worker_embedder: Embedder | None = None


def cache_key(model_id: str, text: str) -> str:
    """Embedding-cache key: the model and the exact text embedded."""
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()


def _init_worker(settings_json: str) -> None:
    global _worker_embedder
    from knowhub.registry import create

    settings = Settings.model_validate_json(settings_json)
    _worker_embedder = create("embedder", settings.embedder.provider, settings)


def _embed_in_worker(texts: list[str]) -> Vectors:
    assert _worker_embedder is not None, "worker initializer did not run"
    return _worker_embedder.embed_documents(texts)


class EmbedRunner:
    """Encodes batches inline, or in one worker process per core for costly models."""

    def __init__(self, embedder: Embedder, settings: Settings) -> None:
        self.embedder = embedder
        self._settings = settings
        self._workers = settings.embedder.workers or (os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None
        self.embedded = 0  # texts actually encoded (not served from the cache)

    def submit(self, texts: Sequence[str]) -> list[Future[Vectors]]:
        """Queue texts for encoding; futures resolve to ``(n, dim)`` arrays, one per batch."""
        self.embedded += len(texts)
        size = self.embedder.batch_size
        batches = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        pool = self._maybe_pool(texts)
        if pool is not None:
            return [pool.submit(_embed_in_worker, batch) for batch in batches]
        futures: list[Future[Vectors]] = []
        for batch in batches:
            future: Future[Vectors] = Future()
            future.set_result(self.embedder.embed_documents(batch))
            futures.append(future)
        return futures

    def _maybe_pool(self, texts: Sequence[str]) -> ProcessPoolExecutor | None:
        # Started on the first real work, so a run with nothing to embed spawns nothing.
        if self._pool is None and self.embedder.parallel and self._workers > 1 and texts:
            self._pool = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=get_context("spawn"),
                initializer=_init_worker,
                initargs=(self._settings.model_dump_json(),),
            )
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def gather(futures: Sequence[Future[Vectors]], dim: int) -> Vectors:
    """Wait for the futures of one document and stack their vectors."""
    if not futures:
        return np.zeros((0, dim), dtype=np.float32)
    return np.vstack([f.result() for f in futures])
