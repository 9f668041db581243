"""Shared mode's session store (``DATA_DIR/sessions.sqlite3``), opened as replicas open it:
several stores over one data dir at once, each with its own connections."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from knowhub.errors import KnowhubError
from knowhub.interfaces.mcp.session_store import SessionRecord, SessionStore
from tests.helpers import WAIT_S, free_port, knowhub

FOLDERS = [f"/srv/projects/p{i:02d}" for i in range(20)]


def _record(path: str, session_id: str, when: float = 1.0) -> SessionRecord:
    return SessionRecord(session_id, path, Path(path).name, "", when, when)


def test_replicas_registering_the_same_folders_at_once_end_with_one_session_each(
    tmp_path: Path,
) -> None:
    stores = [SessionStore(tmp_path) for _ in range(2)]
    start = threading.Barrier(len(stores), timeout=WAIT_S)

    def register_all(replica: int) -> list[str]:
        start.wait()
        store = stores[replica]
        return [store.register(_record(p, f"r{replica}-{p[-2:]}")).session_id for p in FOLDERS]

    try:
        with ThreadPoolExecutor(len(stores)) as pool:
            first, second = pool.map(register_all, range(len(stores)))
        assert first == second  # each folder: the id of whichever replica committed first
        assert sorted(r.path for r in stores[0].all()) == FOLDERS
        assert [r.session_id for r in stores[1].all()] == [r.session_id for r in stores[0].all()]
    finally:
        for store in stores:
            store.close()


def test_a_change_through_one_replica_is_seen_by_the_other(tmp_path: Path) -> None:
    one, other = SessionStore(tmp_path), SessionStore(tmp_path)
    try:
        one.register(_record("/srv/alpha", "a1"))
        assert other.get("a1") == _record("/srv/alpha", "a1")
        other.touch("a1", 50.0)
        one.touch("a1", 20.0)  # a call that ended earlier, noted later: no step back
        other.set_chunks("a1", 7)
        seen = one.get("a1")
        assert seen is not None and (seen.last_access, seen.chunks) == (50.0, 7)
        assert other.remove("a1") == seen
        assert (one.get("a1"), one.count(), one.remove("a1")) == (None, 0, None)
    finally:
        one.close()
        other.close()


def test_sessions_json_of_earlier_releases_is_migrated_once(tmp_path: Path) -> None:
    old = [
        {"session_id": "s1", "path": "/srv/a", "relative_path": "a", "description": "A",
         "created_at": 1.0, "last_access": 2.0, "chunks": 4},
        # Written before chunks were kept.
        {"session_id": "s2", "path": "/srv/b", "relative_path": "b", "description": "",
         "created_at": 3.0, "last_access": 3.0},
    ]  # fmt: skip
    file = tmp_path / "sessions.json"
    file.write_text(json.dumps(old), encoding="utf-8")
    store = SessionStore(tmp_path)
    try:
        assert [(r.session_id, r.chunks) for r in store.all()] == [("s1", 4), ("s2", None)]
        assert not file.exists() and (tmp_path / "sessions.json.migrated").exists()
        store.remove("s1")
        # A sessions.json put back (a backup restored) is not read again over later changes.
        file.write_text(json.dumps(old), encoding="utf-8")
        again = SessionStore(tmp_path)
        assert [r.session_id for r in again.all()] == ["s2"]
        again.close()
    finally:
        store.close()


def test_an_unreadable_sessions_json_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "sessions.json").write_text("[{", encoding="utf-8")
    with pytest.raises(KnowhubError, match=r"sessions\.json is unreadable .*fix or delete it"):
        SessionStore(tmp_path)


def test_an_unreadable_session_store_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "sessions.sqlite3").write_bytes(b"not a database, " * 512)
    with pytest.raises(KnowhubError, match=r"sessions\.sqlite3 is unreadable .*restore it"):
        SessionStore(tmp_path)


def test_serve_mcp_stops_at_start_on_an_unreadable_session_store(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "data" / "sessions.sqlite3").write_bytes(b"not a database, " * 512)
    served = knowhub(
        "--data-dir", "data", "serve", "mcp", "--transport", "http", "--mode", "shared",
        "--path-root", "root", "--port", str(free_port()),
        cwd=tmp_path,
    )  # fmt: skip
    assert served.returncode == 1, served.stderr
    assert "sessions.sqlite3 is unreadable" in served.stderr
    assert "Traceback" not in served.stderr
