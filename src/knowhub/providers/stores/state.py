"""Server state kept in the store: small records with an owner and an expiry, shared by
every process serving one store (the console's sign-ins, chat histories, upload jobs).

A record is ``(kind, owner, key) → value`` (text, usually JSON) with a ``size`` its writer
counts by its own measure (a conversation's characters of questions and answers), an
expiry in wall-clock seconds (``time.time()``: replicas on several machines share it;
monotonic clocks are per process) and a recency order, renewed by every write and by a
read that asks to renew it. ``owner`` is part of the key, so a caller who guesses another's
key under its own owner finds nothing. :meth:`ServerState.trim` enforces the bounds a
writer keeps: expired records go, then the least recently used until at most
``max_records`` and ``max_size`` remain, the most recent always kept.

The SQLite store (and so the catalog of the Chroma and Milvus stores) and the PostgreSQL
store keep them in a ``server_state`` table; :class:`MemoryState` keeps them in this process
only, for a store that has no table of its own (a plugin's) and for tests of the parts alone.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "Change",
    "Entry",
    "MemoryState",
    "OnFirstUse",
    "ServerState",
    "StateHolder",
    "apply",
    "doomed",
    "server_state_of",
    "victims",
]

log = logging.getLogger("knowhub.store")


@dataclass(frozen=True)
class Entry:
    """A record's value and its size, as its writer measures it."""

    value: str
    size: int


Change = Callable[[str | None], Entry | None]
"""What :meth:`ServerState.update` applies: the live value (None: none) → the new entry
(None: delete the record)."""


@runtime_checkable
class ServerState(Protocol):
    def get(
        self, kind: str, owner: str, key: str, now: float, renew_s: float | None = None
    ) -> str | None:
        """The live value (None when absent or expired at ``now``); with ``renew_s`` it
        expires ``renew_s`` after ``now`` instead and becomes the most recently used."""

    def update(
        self, kind: str, owner: str, key: str, change: Change, now: float, ttl_s: float
    ) -> Entry | None:
        """Apply ``change`` to the live value atomically (no other writer of the record runs
        between its read and its write, in this process or another); the written entry
        expires ``ttl_s`` after ``now`` and is the most recently used. Returns it."""

    def delete(self, kind: str, owner: str, key: str) -> bool:
        """Delete the record; False when there was none."""

    def trim(self, kind: str, now: float, max_records: int, max_size: int | None = None) -> int:
        """Delete the ``kind``'s expired records, then its least recently used ones while
        more than ``max_records`` remain or their sizes sum past ``max_size`` (never the
        most recent one). Returns how many went."""

    def count(self, kind: str, now: float) -> int:
        """How many live records of ``kind`` there are."""


@runtime_checkable
class StateHolder(Protocol):
    """A store that keeps server state in its own tables."""

    def server_state(self) -> ServerState: ...


def server_state_of(store: object) -> ServerState:
    """The store's server state; this process's memory for a store without any (then
    replicas share nothing of it: said once in the log)."""
    if isinstance(store, StateHolder):
        return store.server_state()
    log.warning(
        "the store %s keeps no server state: console sign-ins, chat histories and upload jobs "
        "stay in this process (run one replica, or route each client to one)",
        type(store).__name__,
    )
    return MemoryState()


class OnFirstUse:
    """The server state of a store opened at its first use (:func:`server_state_of`), not
    when a server builds its parts: ``serve http`` checks that its data dir is writable
    after building them, and a bad data dir must fail that check with its fix, not the
    store's opening with a bare ``OSError``."""

    def __init__(self, store: Callable[[], object]) -> None:
        self._store = store
        self._state: ServerState | None = None
        self._lock = threading.Lock()

    def _opened(self) -> ServerState:
        with self._lock:
            if self._state is None:
                self._state = server_state_of(self._store())
            return self._state

    def get(
        self, kind: str, owner: str, key: str, now: float, renew_s: float | None = None
    ) -> str | None:
        return self._opened().get(kind, owner, key, now, renew_s)

    def update(
        self, kind: str, owner: str, key: str, change: Change, now: float, ttl_s: float
    ) -> Entry | None:
        return self._opened().update(kind, owner, key, change, now, ttl_s)

    def delete(self, kind: str, owner: str, key: str) -> bool:
        return self._opened().delete(kind, owner, key)

    def trim(self, kind: str, now: float, max_records: int, max_size: int | None = None) -> int:
        return self._opened().trim(kind, now, max_records, max_size)

    def count(self, kind: str, now: float) -> int:
        return self._opened().count(kind, now)


def victims(rows: list[tuple[str, str, int]], max_records: int, max_size: int | None) -> list[int]:
    """Which of ``rows`` (``(owner, key, size)``, most recently used first) to delete so
    that at most ``max_records`` remain and their sizes sum to at most ``max_size``: their
    positions in ``rows``. The first row always stays."""
    total, keep = 0, 0
    for n, (_, _, size) in enumerate(rows):
        total += size
        if n > 0 and (n >= max_records or (max_size is not None and total > max_size)):
            break
        keep = n + 1
    return list(range(keep, len(rows)))


def apply(
    found: tuple[object, ...] | None,
    change: Change,
    delete: Callable[[], object],
    write: Callable[[Entry], object],
) -> Entry | None:
    """An update's step between its read and its write, for a SQL keeper: ``found`` is the
    live row (its value first) or None; ``delete`` or ``write`` what ``change`` made of it."""
    entry = change(None if found is None else str(found[0]))
    if entry is None:
        delete()
    else:
        write(entry)
    return entry


def doomed(
    rows: list[tuple[str, str, int]], max_records: int, max_size: int | None
) -> list[tuple[str, str]]:
    """The ``(owner, key)`` of the ``rows`` (most recently used first) that a trim deletes."""
    return [rows[n][:2] for n in victims(rows, max_records, max_size)]


@dataclass
class _Record:
    entry: Entry
    touched: int
    expires: float


class MemoryState:
    """:class:`ServerState` in this process's memory (nothing shared, nothing persisted)."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str, str], _Record] = {}
        self._lock = threading.Lock()
        self._ticks = itertools.count(1)

    def get(
        self, kind: str, owner: str, key: str, now: float, renew_s: float | None = None
    ) -> str | None:
        with self._lock:
            found = self._records.get((kind, owner, key))
            if found is None or found.expires <= now:
                return None
            if renew_s is not None:
                found.expires, found.touched = now + renew_s, next(self._ticks)
            return found.entry.value

    def update(
        self, kind: str, owner: str, key: str, change: Change, now: float, ttl_s: float
    ) -> Entry | None:
        with self._lock:
            found = self._records.get((kind, owner, key))
            live = found.entry.value if found is not None and found.expires > now else None
            entry = change(live)
            if entry is None:
                self._records.pop((kind, owner, key), None)
            else:
                self._records[(kind, owner, key)] = _Record(entry, next(self._ticks), now + ttl_s)
            return entry

    def delete(self, kind: str, owner: str, key: str) -> bool:
        with self._lock:
            return self._records.pop((kind, owner, key), None) is not None

    def trim(self, kind: str, now: float, max_records: int, max_size: int | None = None) -> int:
        with self._lock:
            mine = [(k, r) for k, r in self._records.items() if k[0] == kind]
            gone = [k for k, r in mine if r.expires <= now]
            live = sorted((r.touched, k, r.entry.size) for k, r in mine if r.expires > now)
            rows = [(k[1], k[2], size) for _, k, size in reversed(live)]
            order = [k for _, k, _ in reversed(live)]
            gone += [order[n] for n in victims(rows, max_records, max_size)]
            for k in gone:
                del self._records[k]
            return len(gone)

    def count(self, kind: str, now: float) -> int:
        with self._lock:
            return sum(k[0] == kind and r.expires > now for k, r in self._records.items())
