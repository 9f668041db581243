"""One SQLite connection per thread, for the SQLite store and the indexed stores' catalog.

A connection reads from one snapshot for as long as any of its statements is unfinished
(a cursor still being iterated, a ``fetchall`` under way). One connection shared by every
thread therefore kept the snapshot of whichever read was in flight: under continuous
concurrent searches it never ended, so reads missed commits made by other connections
(another process's ingest) indefinitely, writes on it failed with "database is locked",
and WAL checkpoints starved. A connection per thread ends each read with its statement,
and makes a transaction on one thread invisible to the others' reads until it commits.

Connections are opened on a thread's first use and closed by that thread: when it ends
(the HTTP and MCP servers' worker pools are bounded, so are they), or on its next use after
:meth:`close`, which closes only the calling thread's own. A thread still running when the
process exits keeps its connection open (SQLite needs no close to stay consistent).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from pathlib import Path

__all__ = ["Connections"]

# Set on every connection: they are per connection, not stored in the file (WAL is, and
# setting it again is a no-op).
_PRAGMAS = (
    "PRAGMA busy_timeout = 30000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
)


class _Handle:
    """A thread's connection; when the thread ends, its locals and so this go, and a
    finalizer closes the connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db


class Connections:
    """The connections to the SQLite file at ``path``, one per thread that uses it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        # Reentrant: a finalizer may run on a thread that holds it (garbage collection).
        self._guard = threading.RLock()
        self._open: set[sqlite3.Connection] = set()
        self._closed = False

    @property
    def open(self) -> int:
        """How many connections are open now."""
        with self._guard:
            return len(self._open)

    def get(self) -> sqlite3.Connection:
        """The calling thread's connection (autocommit: writes use ``BEGIN IMMEDIATE``)."""
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is not None and not self._closed:
            return handle.db
        with self._guard:
            if self._closed:
                if handle is not None:  # closed by another thread: this one closes its own
                    del self._local.handle
                    _release(self._guard, self._open, handle.db)
                raise sqlite3.ProgrammingError(
                    f"the store {self.path} is closed: open it again to use it"
                )
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._open.add(db)
        try:
            for pragma in _PRAGMAS:
                db.execute(pragma)
        except BaseException:
            _release(self._guard, self._open, db)
            raise
        handle = _Handle(db)
        # Not a bound method: the finalizer must not keep the store alive.
        finalizer = weakref.finalize(handle, _release, self._guard, self._open, db)
        # At exit the main thread runs the finalizers still pending; a daemon thread's
        # connection may be mid-statement then (a server's warm-up creating the schema):
        # closing it under that thread crashed the interpreter. Exiting leaves it open.
        finalizer.atexit = threading.current_thread() is threading.main_thread()
        self._local.handle = handle
        return db

    def close(self) -> None:
        """Close the calling thread's connection now; every other thread's is closed by
        that thread, on its next use (an error) or when it ends.

        Closing a connection that another thread is running a statement on crashes the
        interpreter (CPython's sqlite3 frees what the statement still uses: a segfault seen
        when a server shut down while an answer was still reading).
        """
        with self._guard:
            self._closed = True
            handle: _Handle | None = getattr(self._local, "handle", None)
            if handle is not None:
                del self._local.handle
                _release(self._guard, self._open, handle.db)


def _release(
    guard: threading.RLock, connections: set[sqlite3.Connection], db: sqlite3.Connection
) -> None:
    with guard:
        connections.discard(db)
    db.close()
