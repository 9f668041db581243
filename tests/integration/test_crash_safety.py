"""SIGKILL a real `knowhub ingest` process at random moments; the store must stay whole.

After every kill: the store opens, answers a query, has no orphan or duplicate
chunks, and every document is entirely its old version or entirely its new one; the
derived search index (snapshots written at the end of runs, caught up through the change
log) holds exactly the stored rows and ranks as FTS5 does.
A final uninterrupted run must then converge exactly on the files on disk.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO

import pytest

from knowhub.providers.stores.schema import fts_table
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from tests.helpers import spawned

FILES = 300
KILLS = 15


def version_text(index: int, version: int) -> str:
    body = "\n\n".join(
        f"Document {index} version {version} paragraph {p}: "
        + " ".join(f"word{(index * 7 + p * 3 + w) % 97}" for w in range(60))
        for p in range(6)
    )
    return f"# Doc {index}\n\n{body}\n"


def write_versions(folder: Path, versions: dict[int, int]) -> None:
    for index, version in versions.items():
        (folder / f"doc{index:03d}.md").write_text(version_text(index, version), encoding="utf-8")


def ingest_process(
    folder: Path, data: Path, log: IO[bytes]
) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """``knowhub ingest FOLDER --prune``, stderr to ``log``, for a ``with`` block."""
    env = {
        **os.environ,
        "KNOWHUB_EMBEDDER__PROVIDER": "hashing",
        "KNOWHUB_CHUNKING__SIZE": "300",
        "KNOWHUB_CHUNKING__OVERLAP": "50",
    }
    return spawned(
        [
            sys.executable,
            "-m",
            "knowhub",
            "--data-dir",
            str(data),
            "ingest",
            str(folder),
            "--prune",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )


def assert_consistent(data: Path, folder: Path, allowed: dict[int, set[str]]) -> None:
    store = SQLiteStore(data / DB_NAME)
    try:
        assert store.integrity_report() == {
            "orphan_chunks": 0,
            "chunk_count_mismatch": 0,
            "foreign_chunk_ids": 0,
            "fts_mismatch": 0,
        }
        cid = store.collection_id("default")
        if cid is None:
            return  # killed before the collection existed: nothing to check
        for record in store.records(cid):
            index = int(Path(record.path).stem[3:])
            assert record.doc_hash in allowed[index], f"{record.source} is neither old nor new"
            hits = store.hits(
                [
                    rowid
                    for rowid, _ in store.lexical_search(
                        cid, [f"word{index * 7 % 97}"], 10_000, {"source": record.source}
                    )
                ]
            )
            versions = {
                h.text.split(" version ")[1].split()[0]
                for h in hits.values()
                if " version " in h.text
            }
            assert len(versions) <= 1, f"{record.source} mixes versions {versions}"
        assert store.orphans(cid) == []  # the derived index and its snapshot included
        fts = fts_table(cid)
        want = store._db.execute(
            f"SELECT rowid, -bm25({fts}) FROM {fts} WHERE {fts} MATCH 'word1 OR word2'"
        ).fetchall()
        got = store.lexical_search(cid, ["word1", "word2"], 100_000, {})
        assert dict(got) == pytest.approx(dict(want))
    finally:
        store.close()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.slow
def test_store_survives_sigkill_at_random_moments(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    folder, data = tmp_path / "docs", tmp_path / "data"
    folder.mkdir()
    versions = {i: 0 for i in range(FILES)}
    write_versions(folder, versions)
    allowed = {i: {sha(version_text(i, 0))} for i in range(FILES)}
    killed = 0
    for _ in range(KILLS):
        with (
            (tmp_path / "killed.log").open("wb") as log,
            ingest_process(folder, data, log) as process,
        ):
            time.sleep(rng.uniform(0.2, 1.5))  # a moment at random, not a wait for anything
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                killed += 1
            process.wait()
        assert_consistent(data, folder, allowed)
        # Edit two thirds of the files and delete a few before the next run.
        changed = rng.sample(range(FILES), FILES * 2 // 3)
        for index in changed:
            versions[index] += 1
            allowed[index].add(sha(version_text(index, versions[index])))
        write_versions(folder, {i: versions[i] for i in changed})
    assert killed >= KILLS // 2, "the kills came too late to test anything: raise FILES"

    gone = rng.sample(range(FILES), 5)
    for index in gone:
        (folder / f"doc{index:03d}.md").unlink()
    with (
        (tmp_path / "final.log").open("wb") as log,
        ingest_process(folder, data, log) as final,
    ):
        final.wait(timeout=600)
    assert final.returncode == 0, (tmp_path / "final.log").read_text()
    current = {i: {sha(version_text(i, versions[i]))} for i in range(FILES) if i not in gone}
    assert_consistent(data, folder, {**current, **{i: set() for i in gone}})
    store = SQLiteStore(data / DB_NAME)
    try:
        cid = store.collection_id("default")
        assert cid is not None
        records = store.records(cid)
        assert sorted(int(Path(r.path).stem[3:]) for r in records) == sorted(current)
        assert all(r.doc_hash in current[int(Path(r.path).stem[3:])] for r in records)
    finally:
        store.close()
