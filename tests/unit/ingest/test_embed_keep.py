"""The embedding runner's write to the cache when a run stops: the vectors of each batch that
finished and that no written document holds, under the keys a later run looks up; nothing of
a batch still running or queued (a real SQLite store; the hashing embedder)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from knowhub import build_app
from knowhub.errors import ProviderError
from knowhub.ingest.embed import EmbedRunner, cache_key
from knowhub.providers.embedders.base import Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.providers.stores.base import Store
from tests.helpers import fast_settings


class _Gated(HashingEmbedder):
    """Encodes on a background thread in batches of two; a batch holding ``"held"`` waits
    for ``gate``."""

    def __init__(self) -> None:
        super().__init__(16)
        self.batch_size = 2
        self.background = True
        self.gate = threading.Event()

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        if "held" in texts:
            assert self.gate.wait(60), "never released"
        return super()._encode(texts, is_query)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with closing(build_app(fast_settings(tmp_path / "data"))) as app:
        yield app.store


def _keys(embedder: HashingEmbedder, texts: list[str]) -> list[str]:
    return [cache_key(embedder.model_id, text) for text in texts]


def test_finished_batches_no_document_holds_are_cached_once(store: Store, tmp_path: Path) -> None:
    embedder = HashingEmbedder(16)
    embedder.batch_size = 2
    runner = EmbedRunner(embedder, fast_settings(tmp_path / "data"))  # inline: one worker
    written = runner.submit(["a", "b"])
    runner.submit(["c", "d", "e"])
    runner.release(written)  # its document was written, its vectors with it
    assert runner.keep_finished(store) == 3
    cached = store.cached_vectors(_keys(embedder, list("abcde")))
    assert set(cached) == set(_keys(embedder, ["c", "d", "e"]))
    expected = embedder.embed_documents(["c", "d", "e"])
    for key, vector in zip(_keys(embedder, ["c", "d", "e"]), expected, strict=True):
        np.testing.assert_array_equal(cached[key], vector)
    assert runner.keep_finished(store) == 0  # kept once: the runner forgot them


def test_a_batch_still_encoding_or_queued_is_not_waited_for(store: Store, tmp_path: Path) -> None:
    embedder = _Gated()
    runner = EmbedRunner(embedder, fast_settings(tmp_path / "data"))
    try:
        done, held, queued = runner.submit(["a", "b", "held", "c", "d", "e"])
        done.result(timeout=60)
        assert runner.keep_finished(store) == 2
        assert not held.done() and not queued.done()
    finally:
        embedder.gate.set()
        runner.close()
    cached = store.cached_vectors(_keys(embedder, ["a", "b", "held", "c", "d", "e"]))
    assert set(cached) == set(_keys(embedder, ["a", "b"]))


class _Failing(HashingEmbedder):
    """Encodes inline in batches of two; a batch holding ``"bad"`` fails, one holding
    ``"stop"`` is interrupted as by Ctrl-C."""

    def __init__(self) -> None:
        super().__init__(16)
        self.batch_size = 2

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        if "bad" in texts:
            raise RuntimeError("the model failed")
        if "stop" in texts:
            raise KeyboardInterrupt
        return super()._encode(texts, is_query)


def test_the_batches_of_a_document_whose_encoding_failed_are_not_kept(
    store: Store, tmp_path: Path
) -> None:
    # Its document failed: a later stop must neither cache nor count its first batch.
    runner = EmbedRunner(_Failing(), fast_settings(tmp_path / "data"))
    with pytest.raises(ProviderError, match="the model failed"):
        runner.submit(["a", "b", "bad", "c"])
    assert runner.keep_finished(store) == 0


def test_the_batches_encoded_before_a_stop_are_kept(store: Store, tmp_path: Path) -> None:
    embedder = _Failing()
    runner = EmbedRunner(embedder, fast_settings(tmp_path / "data"))
    with pytest.raises(KeyboardInterrupt):
        runner.submit(["a", "b", "stop", "c"])
    assert runner.keep_finished(store) == 2
    assert set(store.cached_vectors(_keys(embedder, ["a", "b", "stop", "c"]))) == set(
        _keys(embedder, ["a", "b"])
    )
