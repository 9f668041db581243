"""Shared fixtures: a fast, deterministic app on a temporary data dir; the xdist grouping."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, build_app
from tests import chroma_server as chroma
from tests import milvus_server as milvus
from tests.documents import Documents, make_documents
from tests.helpers import fast_settings
from tests.pg_server import PgServer, shared_server, stop_shared_server

# The container image's tests build an image for minutes: `make image-test` runs them.
collect_ignore = [] if os.environ.get("KNOWHUB_IMAGE_TEST") else ["image"]


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks (it renames the items by group)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Send the tests that share a class-, module- or package-scoped fixture to one worker,
    and the slow ones to the front.

    Split across pytest-xdist workers, they would build it once per worker (a server started,
    a corpus indexed again); ``--dist loadgroup`` (pyproject addopts) keeps an
    ``xdist_group`` together, so a new module with such a fixture needs no mark of its own.
    The session's servers (pg_server, …) are started per worker instead, so the contract
    suite spreads over all of them.
    """
    for item in items:
        group = _shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Tests of minutes first (a stable sort): one started last would run on alone at the end.
    items.sort(key=lambda item: not _takes_minutes(item))


def _takes_minutes(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in ("slow", "datasets"))


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The widest place (module path, or package for a package-scoped fixture) whose
    fixture ``item`` shares with other tests; None when it shares none."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # not a test function (no fixtures)
        return None
    module = item.nodeid.split("::", 1)[0]
    group = None
    for name in info.names_closure:
        definitions = info.name2fixturedefs.get(name) or ()
        scope = definitions[-1].scope if definitions else "function"
        if scope == "package":
            return definitions[-1].baseid or module
        if scope in ("class", "module"):
            group = module
    return group


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    application = build_app(fast_settings(tmp_path / "data"))
    yield application
    application.close()


@pytest.fixture(scope="session")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Documents:
    """EPUB, OpenDocument and RTF files made by pandoc and LibreOffice, once per session."""
    return make_documents(tmp_path_factory.mktemp("documents"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's embedded PostgreSQL, started by the first test that needs it."""
    yield shared_server()
    stop_shared_server()


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[chroma.ChromaServer]:
    """The session's `chroma run` server, started by the first test that needs it."""
    yield chroma.shared_server()
    chroma.stop_shared_server()


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[milvus.MilvusServer]:
    """The session's Milvus server (milvus-lite's, or the real one KNOWHUB_TEST_MILVUS_URI
    names), started by the first test that needs it."""
    yield milvus.shared_server()
    milvus.stop_shared_server()


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (``@pytest.mark.anyio``) run on asyncio, as the MCP SDK's clients do."""
    return "asyncio"
