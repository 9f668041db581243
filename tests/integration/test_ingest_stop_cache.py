"""A stopped ingest keeps what it embedded: the vectors of every batch it finished go into the
embedding cache (no document holds them yet), its report counts those and no more, and the
next run embeds only the rest (real SQLite files; the hashing embedder, stopped the way Ctrl-C
stops it: a KeyboardInterrupt raised while it encodes)."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from knowhub import build_app
from knowhub.ingest.pipeline import IngestReport, IngestStopped, ingest
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.providers.stores.base import DocumentWrite
from knowhub.providers.stores.sqlite import SQLiteStore
from knowhub.testing.failing_store import FailingStore, inject
from tests.helpers import fast_settings, write

BATCH = 4


class Interrupted(HashingEmbedder):
    """The hashing embedder in batches of :data:`BATCH`, interrupted (as by Ctrl-C) when it
    is asked for batch ``stop_at`` (0-based); ``None``: never."""

    def __init__(self, stop_at: int | None = None) -> None:
        super().__init__(64)
        self.batch_size = BATCH
        self.stop_at = stop_at
        self.batches = 0

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        if not is_query:
            if self.batches == self.stop_at:
                raise KeyboardInterrupt
            self.batches += 1
        return super()._encode(texts, is_query)


def _corpus(docs: Path, notes: int) -> Path:
    """``notes`` one-chunk notes, then a guide of 40 one-chunk sections (10 batches)."""
    for index in range(notes):
        write(docs / f"note{index}.md", f"# Note {index}\n\nNote {index} stands alone.\n")
    sections = "".join(f"## Part {i}\n\nStep {i} turns valve {i * 7} twice.\n\n" for i in range(40))
    write(docs / "z-guide.md", f"# Guide\n\n{sections}")
    return docs


def _vectors(data: Path, docs: Path) -> dict[str, Vectors]:
    """Each chunk's stored vector, by chunk id, once ``docs`` is ingested into ``data``."""
    with closing(build_app(fast_settings(data))) as app:
        ingest(app.store, Interrupted(), app.settings, [docs], "default")
        cid = app.store.collection_id("default")
        assert cid is not None
        return {
            stored.chunk.chunk_id: stored.vector
            for record in app.store.records(cid)
            for stored in app.store.stored_chunks(cid, record.path)
        }


def _stopped_then_rerun(data: Path, docs: Path, stop_at: int) -> tuple[int, IngestReport]:
    """What a run stopped at batch ``stop_at`` embedded, and the report of the run after."""
    with closing(build_app(fast_settings(data))) as app:
        with pytest.raises(IngestStopped) as info:
            ingest(app.store, Interrupted(stop_at), app.settings, [docs], "default")
        return info.value.report.embedded, ingest(
            app.store, Interrupted(), app.settings, [docs], "default"
        )


def test_a_stopped_run_caches_the_batches_it_finished_and_the_next_embeds_the_rest(
    tmp_path: Path,
) -> None:
    docs = _corpus(tmp_path / "docs", notes=3)
    fresh = _vectors(tmp_path / "fresh", docs)  # a run never stopped
    # Stopped in the guide's third batch: three notes and two batches were embedded (what
    # was queued, the whole guide, was counted before).
    embedded, report = _stopped_then_rerun(tmp_path / "data", docs, stop_at=3 + 2)
    assert embedded == 3 + 2 * BATCH
    assert report.ok and len(report.added) == 4
    assert (report.cached, report.embedded) == (embedded, len(fresh) - embedded)

    # The vectors kept are those of their own chunks: the run never stopped stored the same.
    kept = _vectors(tmp_path / "data", docs)
    assert kept.keys() == fresh.keys()
    for chunk_id, vector in fresh.items():
        np.testing.assert_array_equal(kept[chunk_id], vector)


def test_documents_embedded_and_not_yet_committed_are_cached_too(tmp_path: Path) -> None:
    # Past the window of documents in flight, the first notes are written into a group that
    # commits every half second: stopped, the group is dropped, its vectors kept.
    docs = _corpus(tmp_path / "docs", notes=8)
    embedded, report = _stopped_then_rerun(tmp_path / "data", docs, stop_at=8 + 2)
    assert embedded == 8 + 2 * BATCH
    committed = len(report.unchanged)  # notes of a group that did commit (one chunk each)
    assert report.cached + committed == embedded
    assert report.embedded == 8 + 40 - embedded


def _ctrl_c(*call: object) -> None:
    """A real SIGINT, as a second Ctrl-C (in the main thread: the handler runs there)."""
    signal.raise_signal(signal.SIGINT)


def test_a_second_ctrl_c_while_the_vectors_are_cached_loses_neither_them_nor_the_report(
    tmp_path: Path,
) -> None:
    # The write was rolled back and the CLI said "stopped; re-run to continue", no report.
    docs = _corpus(tmp_path / "docs", notes=3)
    settings = fast_settings(tmp_path / "data")
    # A second Ctrl-C (a real SIGINT) as the stopped run caches its vectors.
    store = FailingStore(
        SQLiteStore(tmp_path / "data" / "store.db"), "cache_vectors", _ctrl_c, times=None
    )
    stopped: BaseException | None = None
    # As in a terminal: Ctrl-C raises KeyboardInterrupt (an xdist worker ignores SIGINT).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ingest(store, Interrupted(stop_at=3 + 2), settings, [docs], "default")
    except KeyboardInterrupt as exc:
        stopped = exc
    finally:
        signal.signal(signal.SIGINT, previous)
    with closing(store):
        assert isinstance(stopped, IngestStopped), repr(stopped)
        assert stopped.report.embedded == 3 + 2 * BATCH
        rerun = ingest(store, Interrupted(), settings, [docs], "default")  # caches nothing
    assert rerun.cached == 3 + 2 * BATCH


def test_vectors_from_the_cache_are_counted_for_stored_documents_only(tmp_path: Path) -> None:
    # As `embedded`: the cache's vectors of a document stopped before it was written were
    # counted when its chunks were queued.
    docs = _corpus(tmp_path / "docs", notes=3)
    with closing(build_app(fast_settings(tmp_path / "data"))) as app:
        for stop_at in (3 + 2, 0):  # the second run is stopped at once: nothing stored
            with pytest.raises(IngestStopped) as info:
                ingest(app.store, Interrupted(stop_at), app.settings, [docs], "default")
    assert info.value.report.kept == 0
    assert (info.value.report.cached, info.value.report.embedded) == (0, 0)


def test_a_ctrl_c_as_a_commit_ends_is_reported_with_what_the_commit_wrote(
    tmp_path: Path,
) -> None:
    """Ctrl-C the moment the store has committed a group: the report's documents kept are
    the ones the index holds, not one fewer (the CI run that found it: 12 listed, 11 told)."""
    assert callable(signal.getsignal(signal.SIGINT))  # Python's handler: Ctrl-C raises
    docs = _corpus(tmp_path / "docs", notes=6)
    commits: list[int] = []

    def ctrl_c(cid: int, writes: Sequence[DocumentWrite]) -> None:
        commits.append(len(writes))
        signal.raise_signal(signal.SIGINT)  # lands at once, before the caller's next line

    with closing(build_app(fast_settings(tmp_path / "data"))) as app:
        # Every commit is made, then Ctrl-C.
        inject(app, "replace_documents", ctrl_c, times=None, landed=True)
        with pytest.raises(IngestStopped) as info:
            ingest(app.store, HashingEmbedder(64), app.settings, [docs], "default")
        cid = app.store.collection_id("default")
        assert cid is not None
        stored = sorted(record.source for record in app.store.records(cid))
    report = info.value.report
    assert commits == [len(stored)] and stored  # one commit, then the stop
    assert sorted(report.current()) == stored
    assert report.kept + len(report.not_done) == 7
