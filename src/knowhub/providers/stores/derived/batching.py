"""Concurrent exact scans of one matrix share one matrix product.

An exact dense search reads every vector of the segment once; at 100k chunks that is
~150 MB and ~14 ms, bound by memory bandwidth, not arithmetic. Queries arriving while a
scan runs wait for it to end and are then scored together, ``vectors @ [q1 … qB]``, which
reads the matrix once for all of them (200 queries: ~1.6 ms each). A lone query pays
nothing: it finds no scan running and goes at once.

The thread whose query opens a batch computes it; when it is done, the first query still
waiting (if any) computes the next batch with every query that came meanwhile, so no
thread ever serves others' queries after its own is answered.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ScanBatcher"]

# Queries scored in one product at most: the product's output is n x this floats.
_MAX_BATCH = 64


@dataclass
class _Ticket:
    query: Any
    done: threading.Event = field(default_factory=threading.Event)
    scores: Any = None
    error: BaseException | None = None  # the batch's product failed: raised in each thread
    lead: bool = False  # woken to compute the next batch rather than with its scores


class ScanBatcher:
    """Scores queries against one matrix, batching those that arrive together."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[_Ticket] = []
        self._busy = False
        self.products = 0  # matrix products computed (tests and benchmarks read it)

    def scores(self, vectors: Any, query: Any) -> Any:
        """``vectors @ query``, computed alone or in a batch with concurrent queries."""
        ticket = _Ticket(query)
        with self._lock:
            self._waiting.append(ticket)
            lead = not self._busy
            self._busy = True
        if not lead:
            lead = self._waited(ticket, vectors)
        if lead:
            self._run(vectors)
        if ticket.error is not None:
            raise ticket.error
        return ticket.scores

    def _waited(self, ticket: _Ticket, vectors: Any) -> bool:
        """Wait for the ticket's scores; True when it was handed the next batch instead.
        Interrupted (Ctrl-C), it leaves the queue, or runs the batch it was handed, so the
        queries behind it never wait on a thread that left."""
        try:
            ticket.done.wait()
        except BaseException:
            with self._lock:
                handed = ticket.lead
                if not handed and ticket in self._waiting:
                    self._waiting.remove(ticket)
            if handed:
                self._run(vectors)
            raise
        return ticket.lead

    def _run(self, vectors: Any) -> None:
        with self._lock:
            batch, self._waiting = self._waiting[:_MAX_BATCH], self._waiting[_MAX_BATCH:]
        product, error = None, None
        try:
            product = vectors @ np.stack([t.query for t in batch], axis=1)
        except BaseException as exc:  # every thread of the batch hears it, none waits on
            error = exc
        with self._lock:
            self.products += 1
            successor = self._waiting[0] if self._waiting else None
            self._busy = successor is not None
            if successor is not None:  # under the lock: an interrupted waiter reads it
                successor.lead = True
        for i, ticket in enumerate(batch):
            if product is not None:
                ticket.scores = product[:, i]
            ticket.error = error
            ticket.done.set()
        if successor is not None:
            successor.done.set()
