"""The server-state contract (knowhub.providers.stores.state) on every kind of keeper: this
process's memory, the SQLite store, the Chroma store's SQLite catalog (the Milvus store's is
the same class) and the PostgreSQL store; and the tables an existing store gains when it is
next opened."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from knowhub.providers.stores import pg_state
from knowhub.providers.stores import state as state_module
from knowhub.providers.stores.base import Store
from knowhub.providers.stores.indexed import chroma
from knowhub.providers.stores.pg_schema import PG_SCHEMA_VERSION
from knowhub.providers.stores.postgres import PostgresStore
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.providers.stores.state import Entry, MemoryState, ServerState, server_state_of
from tests.helpers import fast_settings
from tests.pg_server import PgServer

Keeper = Callable[[], ServerState]  # every call: the same state, as another process sees it


@pytest.fixture(params=["memory", "sqlite", "postgres", "chroma"])
def keeper(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Keeper]:
    if request.param == "memory":
        memory = MemoryState()
        yield lambda: memory
        return
    opened: list[Store] = []
    if request.param == "postgres":
        url = request.getfixturevalue("pg_server").create_database()

        def open_store() -> Store:
            return PostgresStore(url)

    elif request.param == "chroma":  # a SQLite catalog: the Milvus store's kind too
        settings = fast_settings(tmp_path / "store", **{"store.provider": "chroma"})

        def open_store() -> Store:
            return chroma.create(settings)

    else:

        def open_store() -> Store:
            return SQLiteStore(tmp_path / DB_NAME)

    def keep() -> ServerState:
        opened.append(open_store())
        return server_state_of(opened[-1])

    yield keep
    for store in opened:
        store.close()


def _put(value: str, size: int | None = None) -> Callable[[str | None], Entry]:
    return lambda _: Entry(value, len(value) if size is None else size)


def test_a_record_is_read_by_its_owner_and_key_only(keeper: Keeper) -> None:
    one, other = keeper(), keeper()
    one.update("chat", "alice", "s1", _put("hello"), now=100.0, ttl_s=60.0)
    assert other.get("chat", "alice", "s1", now=101.0) == "hello"
    assert other.get("chat", "bob", "s1", now=101.0) is None  # another owner: nothing
    assert other.get("jobs", "alice", "s1", now=101.0) is None  # another kind: nothing
    assert other.get("chat", "alice", "s2", now=101.0) is None


def test_a_record_expires_unless_renewed(keeper: Keeper) -> None:
    state = keeper()
    state.update("chat", "a", "old", _put("x"), now=0.0, ttl_s=60.0)
    state.update("chat", "a", "kept", _put("y"), now=0.0, ttl_s=60.0)
    assert state.get("chat", "a", "kept", now=50.0, renew_s=60.0) == "y"  # now until 110
    assert state.get("chat", "a", "old", now=60.0) is None
    assert keeper().get("chat", "a", "kept", now=100.0) == "y"
    assert state.count("chat", now=100.0) == 1
    assert state.trim("chat", now=100.0, max_records=10) == 1  # the expired one is deleted
    assert state.get("chat", "a", "kept", now=100.0) == "y"


def test_an_update_sees_the_live_value_and_may_delete(keeper: Keeper) -> None:
    state = keeper()
    seen: list[str | None] = []

    def append(value: str | None) -> Entry:
        seen.append(value)
        return Entry((value or "") + "+", 1)

    state.update("k", "o", "r", append, now=0.0, ttl_s=10.0)
    state.update("k", "o", "r", append, now=5.0, ttl_s=10.0)
    state.update("k", "o", "r", append, now=20.0, ttl_s=10.0)  # expired: starts anew
    assert seen == [None, "+", None]
    assert state.update("k", "o", "r", lambda _: None, now=21.0, ttl_s=10.0) is None
    assert state.get("k", "o", "r", now=21.0) is None
    assert not state.delete("k", "o", "r")
    state.update("k", "o", "r", _put("v"), now=21.0, ttl_s=10.0)
    assert state.delete("k", "o", "r") and state.get("k", "o", "r", now=21.0) is None


def test_trim_drops_the_least_recently_used_past_either_bound(keeper: Keeper) -> None:
    state = keeper()
    for key in "abc":
        state.update("chat", "t", key, _put("x" * 40), now=0.0, ttl_s=100.0)
    state.get("chat", "t", "a", now=1.0, renew_s=100.0)  # a is now the most recently used
    assert state.trim("chat", now=2.0, max_records=2) == 1
    assert state.get("chat", "t", "b", now=2.0) is None and state.count("chat", now=2.0) == 2
    assert state.trim("chat", now=2.0, max_records=10, max_size=60) == 1
    assert state.get("chat", "t", "a", now=2.0) == "x" * 40  # the most recent always stays
    state.update("chat", "t", "huge", _put("y" * 500), now=3.0, ttl_s=100.0)
    assert state.trim("chat", now=3.0, max_records=10, max_size=60) == 1
    assert state.count("chat", now=3.0) == 1 and state.get("chat", "t", "huge", now=3.0)


def test_trim_keeps_to_its_own_kind(keeper: Keeper) -> None:
    state = keeper()
    state.update("one", "t", "a", _put("x"), now=0.0, ttl_s=100.0)
    state.update("two", "t", "a", _put("x"), now=0.0, ttl_s=1.0)
    state.update("two", "t", "b", _put("x"), now=0.0, ttl_s=100.0)
    assert state.trim("one", now=50.0, max_records=1) == 0
    assert state.count("two", now=50.0) == 1 and state.count("one", now=50.0) == 1


def test_concurrent_updates_of_one_record_lose_no_write(keeper: Keeper) -> None:
    """Each writer appends under the update's lock: every append is there at the end, as
    two replicas recording turns of one conversation at once need."""
    writers, each = 4, 10
    states = [keeper() for _ in range(writers)]

    def append(n: int) -> None:
        for i in range(each):
            mark = f"{n}.{i},"
            states[n].update(
                "k", "o", "r", lambda v, m=mark: Entry(f"{v or ''}{m}", 1), now=0.0, ttl_s=100.0
            )

    threads = [threading.Thread(target=append, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    value = states[0].get("k", "o", "r", now=1.0) or ""
    assert sorted(value.strip(",").split(",")) == sorted(
        f"{n}.{i}" for n in range(writers) for i in range(each)
    )


def test_an_existing_sqlite_store_gains_the_state_table(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    SQLiteStore(path).close()
    with sqlite3.connect(path) as db:  # as a store made before server state was
        db.execute("DROP TABLE server_state")
    _keeps_state(SQLiteStore(path))


def test_a_postgres_store_of_schema_2_is_upgraded(pg_server: PgServer) -> None:
    url = pg_server.create_database()
    PostgresStore(url).close()
    with psycopg.connect(url, autocommit=True) as conn:  # back to what version 2 made
        conn.execute("DROP TABLE knowhub.server_state")
        conn.execute("DROP SEQUENCE knowhub.server_state_touched")
        conn.execute("UPDATE knowhub.meta SET value = '2' WHERE key = 'schema_version'")
    _keeps_state(PostgresStore(url))
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT value FROM knowhub.meta WHERE key = 'schema_version'")
        assert row.fetchone() == (PG_SCHEMA_VERSION,)


def _keeps_state(store: SQLiteStore | PostgresStore) -> None:
    try:
        state = server_state_of(store)
        state.update("k", "o", "r", _put("v"), now=0.0, ttl_s=10.0)
        assert state.get("k", "o", "r", now=1.0) == "v"
    finally:
        store.close()


def test_a_store_without_state_tables_keeps_it_in_memory() -> None:
    assert isinstance(server_state_of(object()), MemoryState)


def test_a_record_used_while_a_postgres_trim_chose_it_stays(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica recorded a turn in the least recently used conversation after another
    replica's trim had chosen it, before that trim deleted it: the conversation just used
    went. The other replica's update here comes between the choice and the deletion."""
    url = pg_server.create_database()
    stores = [PostgresStore(url), PostgresStore(url)]
    trimming, other = (server_state_of(s) for s in stores)
    trimming.update("chat", "t", "a", _put("x"), now=0.0, ttl_s=100.0)
    trimming.update("chat", "t", "b", _put("x"), now=1.0, ttl_s=100.0)  # a is the oldest
    chosen = state_module.victims

    def then_used(rows: list[tuple[str, str, int]], most: int, size: int | None) -> list[int]:
        found = chosen(rows, most, size)
        other.update("chat", "t", "a", _put("used"), now=5.0, ttl_s=100.0)
        return found

    for module in (state_module, pg_state):
        monkeypatch.setattr(module, "victims", then_used, raising=False)
    trimming.trim("chat", now=6.0, max_records=1)
    assert other.get("chat", "t", "a", now=6.0) == "used"
    for store in stores:
        store.close()
