"""The change log: which chunk rows each write of a collection added and removed.

Written by the SQLite store in the transaction of the write itself, keyed by the version
the write commits as, so a derived index at version ``v`` catches up by reading the rows
logged after ``v``; a crash can never leave the log and the rows disagreeing. Writers prune
the entries a snapshot holds (up to its version ``s``) and record ``s`` as the collection's
*floor*: an index older than the floor reloads from the snapshot instead. (The table is
created in :mod:`..schema`.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from knowhub.providers.stores.derived.segment import DIGEST_SQL, Row
from knowhub.providers.stores.schema import fts_table

__all__ = [
    "FINGERPRINT_SQL",
    "changed_rows",
    "drop_changes",
    "fingerprint",
    "floor",
    "log_added",
    "log_removed",
    "prune",
    "rows",
]

# Answered from the chunks_fingerprint index alone (schema.ADDITIONS).
FINGERPRINT_SQL = (
    f"SELECT count(*), coalesce(sum(k.id), 0), coalesce(sum(k.id * {DIGEST_SQL}), 0) "
    "FROM chunks k JOIN documents d ON d.id = k.document_id WHERE k.collection_id = ?"
)
# The version the write in progress commits as (every logged write bumps it once after).
_NEXT = "(SELECT version + 1 FROM collections WHERE id = ?)"


def log_added(db: sqlite3.Connection, cid: int, ids: Iterable[int]) -> None:
    db.executemany(
        f"INSERT INTO changes(collection_id, version, row_id, added) VALUES (?, {_NEXT}, ?, 1)",
        ((cid, cid, i) for i in ids),
    )


def log_removed(db: sqlite3.Connection, cid: int, ids: Iterable[int]) -> None:
    db.executemany(
        f"INSERT INTO changes(collection_id, version, row_id, added) VALUES (?, {_NEXT}, ?, 0)",
        ((cid, cid, i) for i in ids),
    )


def changed_rows(db: sqlite3.Connection, cid: int, since: int, until: int) -> set[int]:
    """Row ids added or removed by the writes after version ``since`` up to ``until``."""
    found = db.execute(
        "SELECT DISTINCT row_id FROM changes WHERE collection_id = ? AND version > ? "
        "AND version <= ?",
        (cid, since, until),
    )
    return {int(r[0]) for r in found}


def floor(db: sqlite3.Connection, cid: int) -> int:
    """The version up to which the log was pruned (0: never)."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (_floor_key(cid),)).fetchone()
    return 0 if row is None else int(row[0])


def prune(db: sqlite3.Connection, cid: int, version: int) -> None:
    """Forget the entries up to ``version`` (a snapshot at it holds them); inside the
    caller's write transaction."""
    db.execute("DELETE FROM changes WHERE collection_id = ? AND version <= ?", (cid, version))
    db.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
        "value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
        (_floor_key(cid), version),
    )


def drop_changes(db: sqlite3.Connection, cid: int) -> None:
    db.execute("DELETE FROM changes WHERE collection_id = ?", (cid,))
    db.execute("DELETE FROM meta WHERE key = ?", (_floor_key(cid),))


def fingerprint(db: sqlite3.Connection, cid: int) -> tuple[int, int, int]:
    """(count, sum, content-weighted sum) of the collection's chunk row ids that have a
    document: a derived index holding other rows than these is stale or foreign. The third
    weighs each id by its chunk id's last two hex digits (of the text's sha256), so rows of
    the same ids with other text (a restored backup written again) differ too."""
    count, total, weighted = db.execute(FINGERPRINT_SQL, (cid,)).fetchone()
    return int(count), int(total), int(weighted)


def rows(db: sqlite3.Connection, cid: int, ids: Sequence[int] | None = None) -> Iterator[Row]:
    """The index rows of the collection (of ``ids`` only, when given), by row id."""
    select = (
        "SELECT k.id, k.chunk_id, k.vector, f.tokens, k.language, d.source, d.format, "
        "k.metadata "
        f"FROM chunks k JOIN documents d ON d.id = k.document_id LEFT JOIN {fts_table(cid)} f "
        "ON f.rowid = k.id WHERE k.collection_id = ?"
    )
    if ids is None:
        for r in db.execute(f"{select} ORDER BY k.id", (cid,)):
            yield Row(*r)
        return
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        part = ordered[start : start + 500]
        marks = ",".join("?" * len(part))
        for r in db.execute(f"{select} AND k.id IN ({marks}) ORDER BY k.id", (cid, *part)):
            yield Row(*r)


def _floor_key(cid: int) -> str:
    return f"changes_floor_{int(cid)}"
