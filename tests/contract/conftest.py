"""knowhub's backends for the store contract suite (:mod:`knowhub.testing.store_contract`).

Every test in this package runs once per backend in :data:`BACKENDS`. A backend is a
factory ``(tmp_path) -> opener``: ``opener()`` opens a store at one location that belongs
to that test alone, and calling it again opens the *same* data (reopen after close, and a
second connection for concurrent readers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.providers.stores.base import Store
from knowhub.providers.stores.indexed import chroma, milvus
from knowhub.providers.stores.postgres import PostgresStore
from knowhub.providers.stores.sqlite import DB_NAME, SQLiteStore
from knowhub.testing.store_contract import BackendFactory, Opener
from tests.chroma_server import shared_server as shared_chroma_server
from tests.chroma_server import unique_prefix
from tests.helpers import fast_settings
from tests.milvus_server import shared_server as shared_milvus_server
from tests.pg_server import shared_server


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
