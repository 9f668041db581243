"""Server state (:mod:`.state`) in the PostgreSQL store's ``knowhub.server_state`` table.

An update locks its record's key (a transaction-scoped advisory lock on the key's hash,
taken before the row exists too) so that two replicas updating one record take turns
instead of losing one's write. Recency comes from a sequence: it orders writes across
processes and machines as their clocks cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

from knowhub.providers.stores.state import Change, Entry, apply, victims

__all__ = ["STATE_TABLE", "PgState"]

Connection = psycopg.Connection[tuple[Any, ...]]

STATE_TABLE: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS knowhub.server_state(
        kind text NOT NULL,
        owner text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        size bigint NOT NULL,
        touched bigint NOT NULL,
        expires double precision NOT NULL,
        PRIMARY KEY(kind, owner, key))""",
    "CREATE SEQUENCE IF NOT EXISTS knowhub.server_state_touched",
    "CREATE INDEX IF NOT EXISTS server_state_touched ON knowhub.server_state(kind, touched)",
)
_WHERE = "kind = %s AND owner = %s AND key = %s"
_LIVE = f"SELECT value FROM knowhub.server_state WHERE {_WHERE} AND expires > %s"
_NEXT = "nextval('knowhub.server_state_touched')"
_UPSERT = (
    "INSERT INTO knowhub.server_state(kind, owner, key, value, size, touched, expires) "
    f"VALUES (%s, %s, %s, %s, %s, {_NEXT}, %s) ON CONFLICT (kind, owner, key) DO UPDATE "
    "SET value = excluded.value, size = excluded.size, touched = excluded.touched, "
    "expires = excluded.expires"
)


class PgState:
    """:class:`~knowhub.providers.stores.state.ServerState` over one PostgreSQL store."""

    def __init__(
        self,
        conn: Callable[[], AbstractContextManager[Connection]],
        transaction: Callable[[], AbstractContextManager[Connection]],
    ) -> None:
        self._conn = conn
        self._transaction = transaction

    def get(
        self, kind: str, owner: str, key: str, now: float, renew_s: float | None = None
    ) -> str | None:
        if renew_s is None:
            with self._conn() as conn:
                found = conn.execute(_LIVE, (kind, owner, key, now)).fetchone()
            return None if found is None else str(found[0])
        with self._transaction() as conn:
            found = conn.execute(
                f"UPDATE knowhub.server_state SET expires = %s, touched = {_NEXT} "
                f"WHERE {_WHERE} AND expires > %s RETURNING value",
                (now + renew_s, kind, owner, key, now),
            ).fetchone()
        return None if found is None else str(found[0])

    def update(
        self, kind: str, owner: str, key: str, change: Change, now: float, ttl_s: float
    ) -> Entry | None:
        where = (kind, owner, key)
        with self._locked(kind, owner, key) as conn:
            return apply(
                conn.execute(_LIVE, (*where, now)).fetchone(),
                change,
                lambda: conn.execute(f"DELETE FROM knowhub.server_state WHERE {_WHERE}", where),
                lambda entry: conn.execute(_UPSERT, (*where, entry.value, entry.size, now + ttl_s)),
            )

    def delete(self, kind: str, owner: str, key: str) -> bool:
        with self._transaction() as conn:
            gone = conn.execute(
                f"DELETE FROM knowhub.server_state WHERE {_WHERE}", (kind, owner, key)
            )
            return gone.rowcount > 0

    def trim(self, kind: str, now: float, max_records: int, max_size: int | None = None) -> int:
        with self._locked(kind, "", "") as conn:  # one trim of a kind at a time
            expired = conn.execute(
                "DELETE FROM knowhub.server_state WHERE kind = %s AND expires <= %s", (kind, now)
            ).rowcount
            rows = conn.execute(
                "SELECT owner, key, size, touched FROM knowhub.server_state WHERE kind = %s "
                "ORDER BY touched DESC",
                (kind,),
            ).fetchall()
            deleted = 0
            for n in victims([row[:3] for row in rows], max_records, max_size):
                owner, key, _, touched = rows[n]
                # Only as read: a replica's update takes the record's own lock, not this
                # trim's, so one renewed since (just used) is no longer the one to drop.
                deleted += conn.execute(
                    f"DELETE FROM knowhub.server_state WHERE {_WHERE} AND touched = %s",
                    (kind, owner, key, touched),
                ).rowcount
        return int(expired) + deleted

    def count(self, kind: str, now: float) -> int:
        with self._conn() as conn:
            row = conn.execute(
                "SELECT count(*) FROM knowhub.server_state WHERE kind = %s AND expires > %s",
                (kind, now),
            ).fetchone()
        return 0 if row is None else int(row[0])

    @contextmanager
    def _locked(self, kind: str, owner: str, key: str) -> Iterator[Connection]:
        """A transaction holding the advisory lock of the record's key until it ends."""
        with self._transaction() as conn:
            name = "\x1f".join((kind, owner, key))
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (name,))
            yield conn
