"""Where an ingest run stands, in files and in chunks encoded: counts, no presentation.

Ingest is embedder-bound (docs/benchmarks.md), so its progress is counted in the chunks
whose vectors are computed; a file counts too, but a 50 MB file is one file and hours of
encoding. A file's chunks are known once it is chunked, before they are encoded, so
``chunks_total`` grows as files are chunked and is final once every file has been
(:attr:`IngestProgress.chunks_final`). Chunks whose vectors the embedding cache holds cost
nothing: they are counted apart.

Every event is sent from the thread running the ingest (workers' batches are counted where
they finish and reported there), so a callback needs no locking of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["IngestProgress", "Progress", "ProgressTracker"]

Event = Literal[
    "started", "page_read", "transformed", "chunked", "embedded", "file_done", "finished"
]


@dataclass(frozen=True)
class IngestProgress:
    """One step of a run, as passed to a :data:`Progress` callback.

    ``event`` says what just happened: the run ``started`` (files found), OCR read
    ``page`` of the ``pages`` of ``source`` (``page_read``: a scan takes a second or so a
    page, before its chunks are known), ``source`` was ``chunked`` (its ``file_chunks``
    to encode are now in ``chunks_total``, the rest of its chunks in ``chunks_cached``),
    a batch was ``embedded``, ``source`` is ``file_done`` (written, unchanged or failed),
    or the run ``finished`` (then ``chunks_total`` is what was encoded).
    """

    event: Event
    source: str
    files_done: int
    files_total: int
    files_chunked: int  # files whose chunk count is known: chunked, unchanged or failed
    chunks_done: int  # chunks encoded so far
    chunks_total: int  # chunks known to need encoding so far
    chunks_cached: int = 0  # chunks of the files chunked so far whose vectors were cached
    file_chunks: int = 0  # on "chunked": the chunks of ``source`` to encode
    page: int = 0  # on "page_read": the page of ``source`` OCR just read (1-based); on
    # "transformed": the chunk the LLM just transformed
    pages: int = 0  # on "page_read": the pages ``source`` has; on "transformed": its chunks

    @property
    def chunks_final(self) -> bool:
        """Every file is chunked: ``chunks_total`` will not grow any more."""
        return self.files_chunked >= self.files_total


Progress = Callable[[IngestProgress], None]
"""Called as ``progress(IngestProgress(...))`` after each step of an ingest run."""


class ProgressTracker:
    """Counts one run's files and chunks and sends each step to ``callback``.

    ``encoded`` reads how many chunks the run's embedding has finished (its workers count
    them as their batches end).
    """

    def __init__(self, callback: Progress | None, encoded: Callable[[], int]) -> None:
        self._callback = callback
        self._encoded = encoded
        self._files_total = self._files_done = self._files_chunked = 0
        self._chunks_total = self._chunks_cached = 0
        self._in_flight: set[str] = set()  # chunked, not yet done
        self._reported = -1  # chunks_done of the last "embedded" event

    def started(self, files_total: int) -> None:
        self._files_total = files_total
        self._send("started", "")

    def found(self, files: int = 1) -> None:
        """``files`` more to handle than the run started with (an archive's members)."""
        self._files_total += files

    def page_read(self, source: str, page: int, pages: int) -> None:
        """OCR read ``page`` of ``source``'s ``pages`` (it is still being loaded)."""
        self._send("page_read", source, page=page, pages=pages)

    def transformed(self, source: str, chunk: int, chunks: int) -> None:
        """The LLM transformed ``chunk`` of ``source``'s ``chunks`` (not yet embedded)."""
        self._send("transformed", source, page=chunk, pages=chunks)

    def chunked(self, source: str, to_encode: int, cached: int = 0) -> None:
        """``source``'s chunks are known: ``to_encode`` of them will be encoded, ``cached``
        come from the embedding cache."""
        self._in_flight.add(source)
        self._files_chunked += 1
        self._chunks_total += to_encode
        self._chunks_cached += cached
        self._send("chunked", source, to_encode)

    def embedded(self, source: str) -> None:
        """A batch (of ``source``, or of a file queued after it) was encoded."""
        if self._encoded() != self._reported:
            self._send("embedded", source)

    def file_done(self, source: str) -> None:
        """``source`` is written, unchanged or failed (chunked or not)."""
        if source in self._in_flight:
            self._in_flight.discard(source)
        else:
            self._files_chunked += 1
        self._files_done += 1
        self._send("file_done", source)

    def finished(self) -> None:
        # A file that failed after chunking left chunks that will never be encoded.
        self._chunks_total = self._encoded()
        self._files_chunked = self._files_done = self._files_total
        self._send("finished", "")

    def _send(
        self, event: Event, source: str, file_chunks: int = 0, page: int = 0, pages: int = 0
    ) -> None:
        if self._callback is None:
            return
        done = self._encoded()
        self._reported = done
        step = IngestProgress(
            event,
            source,
            self._files_done,
            self._files_total,
            self._files_chunked,
            done,
            max(done, self._chunks_total),
            self._chunks_cached,
            file_chunks,
            page,
            pages,
        )
        self._callback(step)
