"""The LLM transform cache: one answer per (chunk text, model, prompt version), in SQLite.

An LLM call costs seconds and money; a re-ingest of the same text (a touched file, a second
collection, a rebuilt version) must cost none. Answers live in their own SQLite file under
the data dir, apart from the index: it is a cache, so a damaged file is set aside and begun
anew rather than failing an ingest, and the index never depends on it. Each answer is
committed as it comes (WAL, ``synchronous=NORMAL``): a crash loses at most the last answers,
never the file. The file is bounded: past ``max_entries`` the oldest answers go, checked when
it is opened and every :data:`_TRIM_EVERY` writes.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from pathlib import Path

__all__ = ["TransformCache", "transform_key"]

log = logging.getLogger("knowhub.ingest")

_TRIM_EVERY = 1000
_SCHEMA = "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, answer TEXT NOT NULL)"


def transform_key(kind: str, model_id: str, prompt_version: int, text: str) -> str:
    """The cache key of ``kind`` (``refine``, ``enrich``) of ``text`` by ``model_id``."""
    digest = hashlib.sha256()
    for part in (kind, model_id, str(prompt_version), text):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class TransformCache:
    """Answers by key, in the SQLite file ``path`` (made when missing)."""

    def __init__(self, path: Path, max_entries: int) -> None:
        self.path = path
        self.max_entries = max_entries
        self._writes = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:  # not a database, or damaged: it is only a cache
            log.warning("LLM transform cache %s unreadable (%s): starting a new one", path, exc)
            path.replace(path.with_name(path.name + ".damaged"))
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")  # another ingest writing answers
        db.execute(_SCHEMA)
        db.execute("SELECT count(*) FROM answers").fetchone()  # a damaged file fails here
        self._trim(db)
        return db

    def get(self, key: str) -> str | None:
        row = self._db.execute("SELECT answer FROM answers WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, answer: str) -> None:
        # REPLACE gives the row a new rowid: rowid order is age, which trimming goes by.
        self._db.execute(
            "INSERT OR REPLACE INTO answers (key, answer) VALUES (?, ?)", (key, answer)
        )
        self._writes += 1
        if self._writes % _TRIM_EVERY == 0:
            self._trim(self._db)

    def _trim(self, db: sqlite3.Connection) -> None:
        (count,) = db.execute("SELECT count(*) FROM answers").fetchone()
        if count > self.max_entries:
            db.execute(
                "DELETE FROM answers WHERE rowid IN "
                "(SELECT rowid FROM answers ORDER BY rowid LIMIT ?)",
                (count - self.max_entries,),
            )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        self._db.close()
