"""ONNX Runtime as knowhub's local models run on it: one-thread sessions, runs side by side.

A run (one text, or one pair) stays on one core and in its cache; up to ``threads`` runs
go at once, each on its own core. Measured with E5 on 2 cores (issue 41): ONNX Runtime
spreading one ~190-token run over two threads kept the second one 46 % busy; runs side by
side keep both busy. ORT's run releases the GIL, so threads suffice.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["Runs", "one_thread_options"]

T = TypeVar("T")
R = TypeVar("R")


def one_thread_options(ort: Any) -> Any:
    """Session options for one run on one core, every graph optimisation on."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Spinning threads burn the cores other work (a second worker, the server) needs:
    # measured 10x slower queries under load with spin-waiting OpenMP.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # warnings of the optimiser would reach stderr
    return options


class Runs:
    """Up to ``threads`` runs of one engine at once (0: one per core), however many callers
    (ingest's batches in flight, a server's queries) ask; each engine has its own."""

    def __init__(self, threads: int) -> None:
        self.threads = threads or os.cpu_count() or 1
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def map(self, run: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``run`` of each item, in order; through the pool when there is more than one
        thread, so the bound holds for every caller."""
        if self.threads == 1:
            return [run(item) for item in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="onnx")
        return list(self._pool.map(run, items))
