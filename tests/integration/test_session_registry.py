"""The shared server's sessions, counted while the idle reaper unloads them: a `list` (or a
scrape of /metrics) that looks at a session the reaper closes in the meantime tells it as
unloaded, with its chunks as stored, instead of failing on the closed store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowhub.interfaces.mcp.metrics import Metrics
from knowhub.interfaces.mcp.shared import SessionRegistry
from tests.helpers import fast_settings, write


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[SessionRegistry]:
    write(tmp_path / "root" / "alpha" / "zebra.md", "# Zebras\n\nZebras graze the savanna.\n")
    registry = SessionRegistry(fast_settings(tmp_path / "data"), tmp_path / "root", 0.0, Metrics())
    try:
        yield registry
    finally:
        registry.close()


def _reaped_while_counted(registry: SessionRegistry) -> int:
    """Register alpha, then have the reaper unload it as the next count reads its store."""
    record, chunks, _ = registry.register("alpha", "animals")
    session = registry._sessions[record.session_id]
    kb = session.kb
    assert kb is not None
    count = kb.chunks

    def unloaded_first() -> int:
        kb.chunks = count  # type: ignore[method-assign]  # the unload counts them itself
        assert registry.unload_idle() == [record.session_id]
        return count()

    kb.chunks = unloaded_first  # type: ignore[method-assign]
    return chunks


def test_a_session_unloaded_while_listed_is_listed_unloaded(registry: SessionRegistry) -> None:
    chunks = _reaped_while_counted(registry)
    [(_, loaded, counted)] = registry.sessions()
    assert (loaded, counted) == (False, chunks)


def test_a_session_unloaded_while_sized_is_left_out(registry: SessionRegistry) -> None:
    record, _, _ = registry.register("alpha", "animals")
    kb = registry._sessions[record.session_id].kb
    assert kb is not None
    collections = kb.reader.collections

    def unloaded_first() -> object:
        kb.reader.collections = collections  # type: ignore[method-assign]
        assert registry.unload_idle() == [record.session_id]
        return collections()

    kb.reader.collections = unloaded_first  # type: ignore[method-assign]
    assert registry.index_sizes() == []
