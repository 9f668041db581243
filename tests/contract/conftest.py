"""The store contract suite's backends and builders.

Every test in this package runs once per backend in :data:`BACKENDS`. A backend is a
factory ``(tmp_path) -> opener``: ``opener()`` opens a store at one location that belongs
to that test alone, and calling it again opens the *same* data (reopen after close, and a
second connection for concurrent readers). The builders below make realistic documents,
chunks, tokens (knowhub's own :func:`~knowhub.lang.index_tokens`) and L2-normalised
float32 vectors without the ingest pipeline, so the suite exercises the store alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowhub.ingest.chunk import make_chunk_id
from knowhub.ingest.embed import cache_key
from knowhub.lang import detect_language, index_tokens
from knowhub.models import Chunk, DocumentRecord
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores import chroma, milvus
from knowhub.providers.stores.base import Store
from knowhub.providers.stores.postgres import PostgresStore
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from tests.chroma_server import shared_server as shared_chroma_server
from tests.chroma_server import unique_prefix
from tests.helpers import fast_settings
from tests.milvus_server import shared_server as shared_milvus_server
from tests.pg_server import shared_server

Opener = Callable[[], Store]
BackendFactory = Callable[[Path], Opener]

# Small vectors keep the 2,000-chunk and 300-document cases fast on every backend.
DIM = 16
EMBEDDER = "contract-test/embedder"


def _sqlite(tmp_path: Path) -> Opener:
    path = tmp_path / "store" / DB_NAME

    def opener() -> Store:
        return SQLiteStore(path)

    return opener


def _postgres(tmp_path: Path) -> Opener:
    # A database of its own per test, on the session's embedded server (started lazily by
    # the first postgres test; its failure to start fails the test, never skips it).
    url = shared_server().create_database()

    def opener() -> Store:
        return PostgresStore(url)

    return opener


def _milvus(tmp_path: Path) -> Opener:
    # milvus-lite in the test's own data dir: every opener() call in this process shares
    # its in-process server (counted, so closing the last store stops it).
    settings = fast_settings(tmp_path / "store", **{"store.provider": "milvus"})

    def opener() -> Store:
        return milvus.create(settings)

    return opener


def _milvus_server(tmp_path: Path) -> Opener:
    # The session's Milvus server (milvus-lite's, or the real one KNOWHUB_TEST_MILVUS_URI
    # names); the test's catalog names Milvus collections of its own.
    settings = shared_milvus_server().settings(tmp_path / "store")

    def opener() -> Store:
        return milvus.create(settings)

    return opener


def _chroma(tmp_path: Path) -> Opener:
    # Chroma's persistent client in the test's own data dir: the stores this process opens
    # on it share one client (and its one-process lock).
    settings = fast_settings(tmp_path / "store", **{"store.provider": "chroma"})

    def opener() -> Store:
        return chroma.create(settings)

    return opener


def _chroma_http(tmp_path: Path) -> Opener:
    # The session's `chroma run` server (started lazily by the first such test; its failure
    # to start fails the test), under collection names of this test's own.
    server = shared_chroma_server()
    settings = fast_settings(
        tmp_path / "store",
        **{
            "store.provider": "chroma",
            "store.chroma.host": server.host,
            "store.chroma.port": server.port,
            "store.chroma.prefix": unique_prefix(),
        },
    )

    def opener() -> Store:
        return chroma.create(settings)

    return opener


# Adding a backend is one entry here: a factory that, for one test's ``tmp_path``, returns
# an opener of a fresh, empty location every call of which reaches the same data, e.g.
#     "postgres": _postgres,  # opener connects to a database/schema named after tmp_path
# The backend must fail (not skip) when its service is unreachable, so a missing server is
# never mistaken for a passing contract.
BACKENDS: dict[str, BackendFactory] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "milvus": _milvus,
    "milvus-server": _milvus_server,
    "chroma": _chroma,
    "chroma-http": _chroma_http,
}


@pytest.fixture(params=list(BACKENDS))
def store_factory(request: pytest.FixtureRequest) -> BackendFactory:
    """The backend under test, as a ``(tmp_path) -> opener`` factory."""
    if request.param == "postgres":
        request.getfixturevalue("pg_server")  # stops the shared server when the session ends
    if request.param == "chroma-http":
        request.getfixturevalue("chroma_server")  # the same, for the Chroma server
    if request.param == "milvus-server":
        request.getfixturevalue("milvus_server")  # the same, for the Milvus server
    factory: BackendFactory = BACKENDS[request.param]
    return factory


@pytest.fixture
def opener(store_factory: BackendFactory, tmp_path: Path) -> Iterator[Opener]:
    """Opens the test's store; every store it opened is closed when the test ends."""
    base = store_factory(tmp_path)
    opened: list[Store] = []

    def open_store() -> Store:
        store = base()
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()  # close() is idempotent: tests may have closed some already


@pytest.fixture
def store(opener: Opener) -> Store:
    return opener()


# -- vectors -------------------------------------------------------------------------


def unit_vectors(n: int, seed: int, dim: int = DIM) -> Vectors:
    """``n`` deterministic random unit vectors (float32, rows L2-normalised)."""
    rows = np.random.default_rng(seed).standard_normal((n, dim))
    return normalised(rows)


def normalised(rows: Any) -> Vectors:
    matrix = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    unit: Vectors = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    return unit


def axis(i: int, dim: int = DIM) -> Vectors:
    """The ``i``-th basis vector: orthogonal directions make scores predictable."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[i] = 1.0
    return vector


# -- documents -----------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    """Everything ``replace_document`` takes for one document."""

    record: DocumentRecord
    chunks: list[Chunk]
    vectors: Vectors
    tokens: list[str]
    cache_keys: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.record.path


def make_doc(
    source: str,
    texts: Sequence[str],
    *,
    collection: str = "docs",
    vectors: Vectors | None = None,
    seed: int = 0,
    fmt: str = "markdown",
    title: str | None = None,
    section_path: str = "",
    metadata: Mapping[str, Any] | None = None,
    chunk_metadata: Sequence[Mapping[str, Any]] | None = None,
    revision: int = 0,
    doc_id: str | None = None,
) -> Doc:
    """A document of one chunk per text, laid out as the ingest pipeline lays it out.

    The chunks are the paragraphs of a text joined by blank lines, so spans and line
    numbers are real; ``revision`` changes the content hash (a new version of the file);
    ``doc_id`` is the document's id, which its chunk ids start with (default: as a record
    from before ids, the doc hash's first 16 digits).
    """
    body = "\n\n".join(texts)
    doc_hash = hashlib.sha256(f"{source}\0{revision}\0{body}".encode()).hexdigest()
    tags = dict(metadata or {})
    chunks: list[Chunk] = []
    offset = 0
    for index, text in enumerate(texts):
        line_start = body.count("\n", 0, offset) + 1
        extra = dict(chunk_metadata[index]) if chunk_metadata is not None else {}
        chunks.append(
            Chunk(
                chunk_id=make_chunk_id(doc_id or doc_hash, index, text),
                doc_hash=doc_hash,
                index=index,
                text=text,
                section_path=section_path,
                page=None,
                line_start=line_start,
                line_end=line_start + text.count("\n"),
                char_start=offset,
                char_end=offset + len(text),
                language=detect_language(text),
                metadata={**tags, **extra},
            )
        )
        offset += len(text) + 2
    record = DocumentRecord(
        collection=collection,
        source=source,
        path=f"/corpus/{source}",
        doc_hash=doc_hash,
        size=len(body.encode()),
        mtime_ns=1_700_000_000_000_000_000 + revision,
        title=title if title is not None else source,
        format=fmt,
        chunk_count=len(chunks),
        char_count=len(body),
        pages=None,
        ingested_at="2024-05-01T12:00:00Z",
        metadata={"tags": tags, **({"knowhub": {"doc_id": doc_id}} if doc_id else {})},
    )
    # The pipeline indexes and embeds the section path with the text (contextual_text).
    indexed = [f"{section_path}\n{t}" if section_path else t for t in texts]
    if vectors is None:
        vectors = unit_vectors(len(texts), seed)
    return Doc(
        record=record,
        chunks=chunks,
        vectors=np.asarray(vectors, dtype=np.float32),
        tokens=[" ".join(index_tokens(t)) for t in indexed],
        cache_keys=[cache_key(EMBEDDER, t) for t in indexed],
    )


def put(store: Store, cid: int, doc: Doc) -> Doc:
    store.replace_document(cid, doc.record, doc.chunks, doc.vectors, doc.tokens, doc.cache_keys)
    return doc


def new_collection(store: Store, name: str = "docs") -> int:
    return store.ensure_collection(name, EMBEDDER, DIM)


def assert_whole(store: Store) -> None:
    """The store reports no orphan, missing or mismatched row."""
    report = store.integrity_report()
    assert report, "integrity_report() must name the checks it ran"
    assert all(count == 0 for count in report.values()), report
