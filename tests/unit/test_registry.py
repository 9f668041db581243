"""registry.override: a provider registered for a block, and what was there before restored."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub import registry
from knowhub.config import Settings
from tests.helpers import fast_settings


def _settings(tmp_path: Path) -> Settings:
    return fast_settings(tmp_path)


def test_override_registers_for_the_block_only(tmp_path: Path) -> None:
    with registry.override("reranker", "fake", lambda settings: "fake"):
        assert registry.create("reranker", "fake", _settings(tmp_path)) == "fake"
        assert "fake" in registry.known("reranker")
    assert "fake" not in registry.known("reranker")
    assert ("reranker", "fake") not in registry._registered


def test_override_restores_the_previous_entry_even_on_an_exception(tmp_path: Path) -> None:
    with registry.override("llm", "scripted", lambda settings: "outer"):
        with pytest.raises(RuntimeError), registry.override("llm", "scripted", lambda s: "inner"):
            assert registry.create("llm", "scripted", _settings(tmp_path)) == "inner"
            raise RuntimeError("the test failed inside the block")
        assert registry.create("llm", "scripted", _settings(tmp_path)) == "outer"
    assert "scripted" not in registry.known("llm")


def test_nested_overrides_undo_in_reverse_order(tmp_path: Path) -> None:
    with registry.override("embedder", "a", lambda settings: 1):
        with registry.override("embedder", "b", lambda settings: 2):
            with registry.override("embedder", "a", lambda settings: 3):
                assert registry.create("embedder", "a", _settings(tmp_path)) == 3
            assert registry.create("embedder", "a", _settings(tmp_path)) == 1
            assert registry.create("embedder", "b", _settings(tmp_path)) == 2
        assert "b" not in registry.known("embedder")
    assert {"a", "b"}.isdisjoint(registry.known("embedder"))


def test_an_override_shadows_a_built_in_and_gives_it_back(tmp_path: Path) -> None:
    with registry.override("llm", "none", lambda settings: "shadow"):
        assert registry.create("llm", "none", _settings(tmp_path)) == "shadow"
    assert registry.create("llm", "none", _settings(tmp_path)) is None
