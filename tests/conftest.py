"""Shared fixtures: a fast, deterministic app on a temporary data dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub import App, build_app
from tests import chroma_server as chroma
from tests import milvus_server as milvus
from tests.helpers import fast_settings
from tests.pg_server import PgServer, shared_server, stop_shared_server


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    application = build_app(fast_settings(tmp_path / "data"))
    yield application
    application.close()


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
