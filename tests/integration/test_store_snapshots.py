"""SQLite catalogs: a read in flight on one thread never pins what other threads read.

``serve http`` searches on many worker threads while ``serve mcp`` (another process) commits
ingests into the same file. SQLite keeps a connection's read snapshot while any of its
statements is unfinished, so one connection shared by every thread (as the store had) kept
the snapshot of whichever read was in flight, and under continuous load never saw a newer
commit: a search missed a revision the other process had just reported committed (and a
write on that connection failed with "database is locked").
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from knowhub.errors import StoreError
from knowhub.lang import query_tokens
from knowhub.providers.stores.base import Store
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.store_data import axis, make_doc, new_collection, put
from tests.contract.conftest import BACKENDS
from tests.helpers import WAIT_S


@pytest.fixture(params=["sqlite", "chroma"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens the catalog (plain SQLite, or the SQLite catalog of an indexed store) anew."""
    opened: list[Store] = []

    def open_store() -> Store:
        opened.append(BACKENDS[request.param](tmp_path)())
        return opened[-1]

    yield open_store
    for store in reversed(opened):
        store.close()


def _hold_a_read(store: Store, started: threading.Event, finish: threading.Event) -> None:
    # Any statement left unfinished on the store's connection: a big fetchall under way or
    # the lazily iterated filter of a dense search, on another worker thread.
    cursor = store._db.execute("SELECT id FROM chunks")  # type: ignore[attr-defined]
    cursor.fetchone()
    started.set()
    finish.wait(WAIT_S)
    cursor.fetchall()


def test_a_search_finds_what_another_process_committed_while_a_read_is_in_flight(
    opener: Callable[[], Store],
) -> None:
    store = opener()
    cid = new_collection(store)
    put(store, cid, make_doc("a.md", ["one alpha", "two alpha", "three alpha"]))
    before = store.version(cid)
    started, finish = threading.Event(), threading.Event()
    reader = threading.Thread(target=_hold_a_read, args=(store, started, finish))
    reader.start()
    try:
        assert started.wait(WAIT_S)
        other_process = opener()  # a connection of its own, as serve mcp's ingest has
        fresh = make_doc("b.md", ["zebra crossing"], vectors=np.stack([axis(3)]))
        put(other_process, cid, fresh)

        assert store.version(cid) == before + 1  # keys the result cache: it must move
        found = store.lexical_search(cid, query_tokens("zebra crossing"), 5, {})
        dense = store.dense_search(cid, axis(3), 1, {})
        hits = store.hits([row for row, _ in found + dense])
        assert {hit.source for hit in hits.values()} == {"b.md"}
        put(store, cid, make_doc("c.md", ["a write from this process"]))  # not "locked"
        assert store.version(cid) == before + 2
    finally:
        finish.set()
        reader.join(WAIT_S)
    assert not reader.is_alive()


def test_a_thread_that_ends_closes_its_connection_and_close_leaves_others_to_their_thread(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = new_collection(store)
    workers = [threading.Thread(target=store.version, args=(cid,)) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(WAIT_S)
    assert store._connections.open == 1  # this thread's; the workers' went with them
    held = threading.Event()
    done = threading.Event()

    errors: list[Exception] = []

    def hold() -> None:
        store.version(cid)
        held.set()
        done.wait(WAIT_S)
        try:
            store.version(cid)
        except Exception as exc:  # the store was closed meanwhile
            errors.append(exc)

    worker = threading.Thread(target=hold)
    worker.start()
    assert held.wait(WAIT_S)
    assert store._connections.open == 2
    store.close()
    # Only this thread's: closing one another thread may be running a statement on
    # crashed the interpreter (a server shut down while an answer was reading).
    assert store._connections.open == 1
    done.set()
    worker.join(WAIT_S)
    assert [str(e) for e in errors] == [
        f"the store {tmp_path / DB_NAME} is closed: open it again to use it"
    ]
    assert store._connections.open == 0  # the worker closed its own on that use
    with pytest.raises(Exception, match="closed"):
        store.version(cid)


# Run as a program: a daemon thread holds its connection while the interpreter exits.
# The check runs after weakref's exit hook (atexit runs last-registered first, and this
# one is registered before the first connection creates that hook).
_EXIT_WHILE_A_THREAD_READS = """
import atexit, sys, threading, weakref
from pathlib import Path
from knowhub.providers.stores.sqlite_connections import Connections

assert not weakref.finalize._registered_with_atexit, "weakref's exit hook came first"
connections = Connections(Path(sys.argv[1]))
ready, asked, answered = threading.Event(), threading.Event(), threading.Event()
state = []

def reader():
    db = connections.get()
    db.execute("SELECT 1").fetchone()
    ready.set()
    asked.wait()
    try:
        db.execute("SELECT 1").fetchone()
        state.append("open")
    except Exception as exc:
        state.append(repr(exc))
    answered.set()

def after_weakref_exit_hook():
    asked.set()
    answered.wait(60)
    print(state)

atexit.register(after_weakref_exit_hook)
connections.get()
threading.Thread(target=reader, daemon=True).start()
ready.wait()
"""


def test_exiting_leaves_a_running_threads_connection_to_it(tmp_path: Path) -> None:
    """CI crashed (SIGSEGV) when ``serve mcp`` exited while its warm-up thread was creating
    the schema: at exit the main thread closed every thread's connection, one mid-statement."""
    run = subprocess.run(
        [sys.executable, "-c", _EXIT_WHILE_A_THREAD_READS, str(tmp_path / DB_NAME)],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert (run.returncode, run.stdout.strip()) == (0, "['open']"), run.stderr


def test_a_collection_another_process_creates_meanwhile_is_taken_not_created_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two shared-mode replicas registering one folder both indexed it into one store, and
    one failed (``UNIQUE constraint failed: collections.name``): each saw no collection,
    then both created it. Here the other store creates it between this one's look and its
    write."""
    first, second = SQLiteStore(tmp_path / DB_NAME), SQLiteStore(tmp_path / DB_NAME)
    writing = first.transaction

    @contextmanager
    def after_the_other(*args: object) -> Iterator[sqlite3.Connection]:
        other = second.ensure_collection("docs", "e", 4)
        with writing() as db:
            yield db
        assert first.collection_id("docs") == other

    monkeypatch.setattr(first, "transaction", after_the_other)
    assert first.ensure_collection("docs", "e", 4) == second.collection_id("docs")
    assert [c.name for c in first.collections()] == ["docs"]
    with pytest.raises(StoreError, match="built with embedder e"):
        second.ensure_collection("docs", "f", 4)
    first.close()
    second.close()
