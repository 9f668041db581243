"""Ingest commits several documents at once, each still whole or not at all (issue 14).

And an embedder that releases the GIL encodes on a background thread, so that loading
and chunking the next files overlaps it.
"""

from __future__ import annotations

import errno
import sqlite3
import threading
from concurrent.futures import CancelledError
from pathlib import Path

import numpy as np
import pytest

from knowhub import App
from knowhub.config import Settings
from knowhub.ingest.embed import EmbedRunner, abort_all
from knowhub.ingest.pipeline import IngestCancelledError
from knowhub.models import Chunk, DocumentRecord
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.stores.base import DocumentWrite
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.failing_store import inject
from tests.helpers import WAIT_S, fast_settings, write


def document(name: str, dim: int, rows: int = 1) -> DocumentWrite:
    digest = (name.encode().hex() * 8)[:64]
    record = DocumentRecord(
        "c",
        name,
        f"/docs/{name}",
        digest,
        10,
        1,
        name,
        "md",
        rows,
        4,
        None,
        "2026-12-01T00:00:00Z",
    )
    chunks = [
        Chunk(
            f"{record.doc_id}_{i:04d}_00000000",
            digest,
            i,
            "text",
            "",
            None,
            1,
            1,
            0,
            4,
            "en",
        )
        for i in range(rows)
    ]
    vectors = np.ones((rows, dim), dtype=np.float32) / np.sqrt(dim)
    return DocumentWrite(record, chunks, vectors, [f"text {name}"] * rows, [f"k-{name}"] * rows)


def small_docs(tmp_path: Path, count: int) -> tuple[Path, App]:
    """``count`` one-paragraph Markdown files, and an App with the hashing embedder."""
    docs = tmp_path / "docs"
    for n in range(count):
        write(docs / f"doc{n}.md", f"# Doc {n}\n\nBody of document number {n}.\n")
    return docs, App(fast_settings(tmp_path / "data"))


def test_one_bad_document_in_a_group_leaves_the_others_written(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = store.ensure_collection("c", "test-model", 4)
    good, other = document("a.md", 4), document("c.md", 4)
    bad = document("b.md", 4)
    bad = DocumentWrite(
        bad.record, bad.chunks, np.ones((1, 3), np.float32), bad.tokens, bad.cache_keys
    )
    errors = store.replace_documents(cid, [good, bad, other])
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and "b.md" in str(errors[1])
    assert {r.source for r in store.records(cid)} == {"a.md", "c.md"}
    assert not any(store.integrity_report().values()), store.integrity_report()
    store.close()


def test_a_document_failing_after_its_rows_went_in_is_rolled_back_alone(tmp_path: Path) -> None:
    # Its tokens hold a lone surrogate, which SQLite cannot encode: its document and chunk
    # rows went in before the lexical index refused them, in the middle of its write.
    store = SQLiteStore(tmp_path / DB_NAME)
    cid = store.ensure_collection("c", "test-model", 4)
    good, other = document("a.md", 4), document("c.md", 4)
    bad = document("b.md", 4)
    bad = DocumentWrite(bad.record, bad.chunks, bad.vectors, ["text \ud800"], bad.cache_keys)
    errors = store.replace_documents(cid, [good, bad, other])
    assert errors[0] is None and errors[2] is None
    assert isinstance(errors[1], UnicodeEncodeError), errors[1]
    assert {r.source for r in store.records(cid)} == {"a.md", "c.md"}  # b.md's rows rolled back
    assert not any(store.integrity_report().values()), store.integrity_report()
    store.close()


def test_an_ingest_commits_each_document_whole_with_a_failing_one_among_them(
    tmp_path: Path,
) -> None:
    docs, app = small_docs(tmp_path, 6)
    # doc0-2 are written, doc3's write fails (its rows rolled back: the test above).
    inject(app, "replace_document", OSError("disk full while writing doc3"), after=3)
    report = app.collection().ingest([docs])
    assert len(report.failed) == 1, report.failed
    ((source, reason),) = report.failed
    assert source.endswith("doc3.md") and "disk full" in reason
    assert len(report.added) == 5
    cid = app.store.collection_id("default")
    assert cid is not None
    sources = {Path(r.source).name for r in app.store.records(cid)}
    assert sources == {f"doc{n}.md" for n in range(6) if n != 3}
    assert all(v == 0 for v in app.store.integrity_report().values())
    app.store.close()


def test_a_full_disk_stops_the_run_counting_the_documents_its_group_did_write(
    tmp_path: Path,
) -> None:
    # doc3's write hits ENOSPC, doc0-2 of its group written in the same commit: the run
    # stops, and the report keeps those three as written, not "not done".
    docs, app = small_docs(tmp_path, 6)
    inject(app, "replace_document", OSError(errno.ENOSPC, "No space left on device"), after=3)
    with pytest.raises(IngestCancelledError, match="is full") as stopped:
        app.collection().ingest([docs])
    report = stopped.value.report
    cid = app.store.collection_id("default")
    assert cid is not None
    written = sorted(Path(r.source).name for r in app.store.records(cid))
    assert written == [f"doc{n}.md" for n in range(6) if n != 3]  # one commit, doc3 left out
    assert sorted(Path(s).name for s in report.added) == written
    assert not {Path(s).name for s in report.not_done} & set(written), report.not_done
    app.store.close()


class _Gated(Embedder):
    """Encodes only once ``gate`` is set, on whichever thread calls it."""

    model_id, dim, parallel, background = "gated", 4, False, True

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.threads: set[str] = set()

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        self.threads.add(threading.current_thread().name)
        assert self.gate.wait(WAIT_S), "never released"
        return np.full((len(texts), self.dim), 0.5, dtype=np.float32)


def test_a_background_embedder_encodes_while_the_caller_goes_on(tmp_path: Path) -> None:
    embedder = _Gated()
    runner = EmbedRunner(embedder, Settings(data_dir=tmp_path))
    futures = runner.submit(["one", "two", "three"])  # returns at once: the gate is shut
    assert not all(f.done() for f in futures)
    embedder.gate.set()
    vectors = runner.gather(futures)
    runner.close()
    assert vectors.shape == (3, 4)
    assert embedder.threads and threading.current_thread().name not in embedder.threads


def test_a_shutdown_cancels_a_background_embedders_queued_batches(tmp_path: Path) -> None:
    # stop_ingests() calls abort_all(): a server going down must not wait for every batch.
    embedder = _Gated()
    embedder.batch_size = 1
    runner = EmbedRunner(embedder, Settings(data_dir=tmp_path))
    futures = runner.submit(["one", "two", "three", "four"])
    abort_all()
    embedder.gate.set()  # the batch already running ends; the queued ones never start
    assert sum(f.cancelled() for f in futures) >= 2
    with pytest.raises(CancelledError):
        runner.gather(futures)
    runner.close()


def test_a_failed_commit_fails_its_documents_and_the_run_goes_on(tmp_path: Path) -> None:
    docs, app = small_docs(tmp_path, 3)
    full_disk = sqlite3.OperationalError("database or disk is full")
    inject(app, "replace_documents", full_disk, times=None)  # every commit
    report = app.collection().ingest([docs])
    assert not report.added and len(report.failed) == 3, report
    assert all("disk is full" in reason for _, reason in report.failed), report.failed
    app.store.close()
