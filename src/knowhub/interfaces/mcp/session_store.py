"""Shared mode's registered sessions, kept in ``DATA_DIR/sessions.sqlite3``.

Every replica serving one data dir reads and writes this one file, so a folder registered
through one replica is served by any other, and an unregistration anywhere ends it
everywhere. Each change is one ``BEGIN IMMEDIATE`` transaction, and ``path`` is unique: two
replicas registering the same folder at once end with one session, the one that committed
first. The ``sessions.json`` of earlier releases is read into it once, on the first start,
and kept beside it renamed ``sessions.json.migrated``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from knowhub.errors import KnowhubError
from knowhub.providers.stores.sqlite_connections import Connections

__all__ = ["SessionRecord", "SessionStore"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS sessions(
    session_id TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    relative_path TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_access REAL NOT NULL,
    chunks INTEGER)"""
_MIGRATED = "CREATE TABLE IF NOT EXISTS migrated(name TEXT PRIMARY KEY)"


@dataclass
class SessionRecord:
    session_id: str
    path: str  # absolute
    relative_path: str
    description: str
    created_at: float
    last_access: float
    # As of its last load or unload, so that ``list`` shows a size without loading it;
    # None for a session registered by a release that did not keep it.
    chunks: int | None = None


_COLUMNS = ", ".join(f.name for f in fields(SessionRecord))


class SessionStore:
    """The registered sessions of one data dir, shared by every process serving it."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "sessions.sqlite3"
        self._connections = Connections(self.path)
        try:
            with self._transaction() as db:
                db.execute(_SCHEMA)
                db.execute(_MIGRATED)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise KnowhubError(
                f"{self.path} is unreadable ({exc}): restore it from a backup, or move it "
                "away (the folders are then registered anew)"
            ) from exc
        self._migrate(data_dir / "sessions.json")

    def register(self, record: SessionRecord) -> SessionRecord:
        """``record``, stored; or the session already registered for its folder."""
        with self._transaction() as db:
            found = _one(db, "path = ?", record.path)
            if found is not None:
                return found
            db.execute(f"INSERT INTO sessions({_COLUMNS}) VALUES (?,?,?,?,?,?,?)", astuple(record))
            return record

    def get(self, session_id: str) -> SessionRecord | None:
        return _one(self._connections.get(), "session_id = ?", session_id)

    def all(self) -> list[SessionRecord]:
        rows = self._connections.get().execute(
            f"SELECT {_COLUMNS} FROM sessions ORDER BY created_at, session_id"
        )
        return [SessionRecord(*row) for row in rows]

    def count(self) -> int:
        row = self._connections.get().execute("SELECT count(*) FROM sessions").fetchone()
        return int(row[0])

    def remove(self, session_id: str) -> SessionRecord | None:
        """Forget the session; return it, or None if it was not registered."""
        with self._transaction() as db:
            found = _one(db, "session_id = ?", session_id)
            db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            return found

    def touch(self, session_id: str, when: float) -> None:
        """Note a use; never moves ``last_access`` back (replicas' calls end in any order)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE sessions SET last_access = max(last_access, ?) WHERE session_id = ?",
                (when, session_id),
            )

    def set_chunks(self, session_id: str, chunks: int) -> None:
        with self._transaction() as db:
            db.execute("UPDATE sessions SET chunks = ? WHERE session_id = ?", (chunks, session_id))

    def close(self) -> None:
        self._connections.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._connections.get()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _migrate(self, old: Path) -> None:
        """Read the ``sessions.json`` of earlier releases once (whichever replica starts
        first), then rename it so that no later start reads it again."""
        if not old.exists():
            return
        with self._transaction() as db:
            # Under the write lock: a replica starting at the same time waits, then finds
            # the flag set (and the file perhaps renamed already).
            done = db.execute("SELECT 1 FROM migrated WHERE name = ?", (old.name,)).fetchone()
            if not done and old.exists():
                db.executemany(
                    f"INSERT OR IGNORE INTO sessions({_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                    [astuple(r) for r in _read_json(old)],
                )
                db.execute("INSERT INTO migrated(name) VALUES (?)", (old.name,))
        # After the commit (a crash before it leaves the file to read again), by whichever
        # replica gets here first.
        with contextlib.suppress(FileNotFoundError):
            old.replace(old.with_name(old.name + ".migrated"))


def _one(db: sqlite3.Connection, where: str, value: str) -> SessionRecord | None:
    row = db.execute(f"SELECT {_COLUMNS} FROM sessions WHERE {where}", (value,)).fetchone()
    return None if row is None else SessionRecord(*row)


def _read_json(file: Path) -> list[SessionRecord]:
    try:
        rows = json.loads(file.read_text(encoding="utf-8"))
        return [SessionRecord(**row) for row in rows]
    except (OSError, ValueError, TypeError) as exc:
        raise KnowhubError(
            f"{file} is unreadable ({exc}): fix or delete it (its sessions are then "
            "registered anew)"
        ) from exc
