"""Server state (:mod:`.state`) in the SQLite store's ``server_state`` table (created with
the schema's additions, so an existing data dir gains it when it is next opened).

Every change runs in a ``BEGIN IMMEDIATE`` transaction, which every process writing the file
takes in turn: an update's read and write are one step for all of them. Recency is a counter
taken inside that transaction (one past the kind's largest), so it orders writes across
processes as wall clocks of the same second cannot.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from knowhub.providers.stores.state import Change, Entry, apply, doomed

__all__ = ["SQLiteState"]

_WHERE = "kind = ? AND owner = ? AND key = ?"
# Within the record's kind (what trim orders), found through the (kind, touched) index.
_NEXT = "(SELECT coalesce(max(touched), 0) + 1 FROM server_state WHERE kind = ?)"
_UPSERT = (
    "INSERT INTO server_state(kind, owner, key, value, size, touched, expires) "
    f"VALUES (?, ?, ?, ?, ?, {_NEXT}, ?) ON CONFLICT(kind, owner, key) DO UPDATE "
    "SET value = excluded.value, size = excluded.size, touched = excluded.touched, "
    "expires = excluded.expires"
)


class SQLiteState:
    """:class:`~knowhub.providers.stores.state.ServerState` over one SQLite store."""

    def __init__(
        self,
        transaction: Callable[[], AbstractContextManager[sqlite3.Connection]],
        reader: Callable[[], sqlite3.Connection],
    ) -> None:
        self._transaction = transaction
        self._reader = reader

    def get(
        self, kind: str, owner: str, key: str, now: float, renew_s: float | None = None
    ) -> str | None:
        if renew_s is None:
            row = self._reader().execute(
                f"SELECT value FROM server_state WHERE {_WHERE} AND expires > ?",
                (kind, owner, key, now),
            )
            found = row.fetchone()
            return None if found is None else str(found[0])
        with self._transaction() as db:
            found = db.execute(
                f"SELECT value FROM server_state WHERE {_WHERE} AND expires > ?",
                (kind, owner, key, now),
            ).fetchone()
            if found is not None:
                db.execute(
                    f"UPDATE server_state SET expires = ?, touched = {_NEXT} WHERE {_WHERE}",
                    (now + renew_s, kind, kind, owner, key),
                )
        return None if found is None else str(found[0])

    def update(
        self, kind: str, owner: str, key: str, change: Change, now: float, ttl_s: float
    ) -> Entry | None:
        where = (kind, owner, key)
        with self._transaction() as db:
            return apply(
                db.execute(
                    f"SELECT value FROM server_state WHERE {_WHERE} AND expires > ?", (*where, now)
                ).fetchone(),
                change,
                lambda: db.execute(f"DELETE FROM server_state WHERE {_WHERE}", where),
                lambda entry: db.execute(
                    _UPSERT, (*where, entry.value, entry.size, kind, now + ttl_s)
                ),
            )

    def delete(self, kind: str, owner: str, key: str) -> bool:
        with self._transaction() as db:
            gone = db.execute(f"DELETE FROM server_state WHERE {_WHERE}", (kind, owner, key))
            return gone.rowcount > 0

    def trim(self, kind: str, now: float, max_records: int, max_size: int | None = None) -> int:
        with self._transaction() as db:
            expired = db.execute(
                "DELETE FROM server_state WHERE kind = ? AND expires <= ?", (kind, now)
            ).rowcount
            rows = db.execute(
                "SELECT owner, key, size FROM server_state WHERE kind = ? ORDER BY touched DESC",
                (kind,),
            ).fetchall()
            gone = doomed(rows, max_records, max_size)
            db.executemany(f"DELETE FROM server_state WHERE {_WHERE}", [(kind, *k) for k in gone])
        return int(expired) + len(gone)

    def count(self, kind: str, now: float) -> int:
        row = self._reader().execute(
            "SELECT count(*) FROM server_state WHERE kind = ? AND expires > ?", (kind, now)
        )
        return int(row.fetchone()[0])
