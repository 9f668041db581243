"""Models the user brings as ONNX folders (``embedder.provider: onnx``,
``reranker.provider: onnx-cross-encoder``), on tiny random-weight BERTs built by
tests/onnx_models.py, checked against the fixtures' numpy forward passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from knowhub.config.models import OnnxCrossEncoderOptions, OnnxEmbedderOptions
from knowhub.errors import ConfigError
from knowhub.providers.embedders.onnx_local import OnnxEmbedder
from knowhub.providers.rerankers.onnx_cross import OnnxCrossEncoder
from tests.helpers import write
from tests.onnx_models import build_cross_encoder, build_encoder, drop_tokenizer, set_config_dim

TEXTS = [
    "weekly database backup to the server",
    "espresso coffee brewing at home",
    "the invoice payment is due on friday",
]
PROMPTS = {"query": "query: ", "passage": "passage: "}


def embedder(folder: Path, **options: object) -> OnnxEmbedder:
    return OnnxEmbedder(OnnxEmbedderOptions.model_validate({"path": folder, **options}))


def normalised(vectors: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
@pytest.mark.parametrize("output", ["last_hidden_state", "sentence_embedding"])
def test_vectors_are_the_models_for_each_pooling(tmp_path: Path, pooling: str, output: str) -> None:
    fixture = build_encoder(tmp_path / "m", pooling=pooling, output=output, prompts=PROMPTS)
    model = embedder(fixture.folder)
    passages = model.embed_documents(TEXTS)
    cosines = np.sum(passages * fixture.reference(TEXTS, prefix="passage: "), axis=1)
    assert cosines.min() >= 0.9999, cosines
    query = model.embed_query(TEXTS[0])
    assert float(query @ fixture.reference(TEXTS[:1], prefix="query: ")[0]) >= 0.9999
    assert model.dim == 32 and model.output == output


def test_prompts_and_pooling_can_be_overridden(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m", pooling="mean", prompts=PROMPTS)
    model = embedder(fixture.folder, query_prefix="", pooling="cls")
    query = model.embed_query(TEXTS[1])
    assert float(query @ fixture.reference(TEXTS[1:2], pooling="cls")[0]) >= 0.9999
    other = fixture.reference(TEXTS[1:2], pooling="mean", prefix="query: ")[0]
    assert float(query @ other) < 0.999, "neither the folder's prompt nor its pooling was used"


def test_matryoshka_keeps_the_first_dimensions(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m")
    model = embedder(fixture.folder, dim=16)
    expected = normalised(fixture.reference(TEXTS)[:, :16])
    assert model.dim == 16
    np.testing.assert_allclose(model.embed_documents(TEXTS), expected, atol=1e-5)
    with pytest.raises(ConfigError, match="at most the model's width"):
        embedder(fixture.folder, dim=64).embed_documents(TEXTS)


def test_a_text_is_its_own_whatever_runs_beside_it_and_long_ones_are_cut(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m", max_positions=64)
    model = embedder(fixture.folder, threads=2)
    long_text = " ".join(["backup server database"] * 100)  # past 64 tokens
    together = model.embed_documents([*TEXTS, long_text])
    alone = np.vstack([model.embed_documents([text]) for text in [*TEXTS, long_text]])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert float(together[3] @ fixture.reference([long_text])[0]) >= 0.9999


def test_the_id_follows_the_models_content_and_how_it_is_used(tmp_path: Path) -> None:
    first = embedder(build_encoder(tmp_path / "a" / "m", seed=0).folder).model_id
    assert first.startswith("onnx:bert:")
    shutil.copytree(tmp_path / "a" / "m", tmp_path / "b" / "renamed")
    assert embedder(tmp_path / "b" / "renamed").model_id == first, "the same files, the same model"
    assert embedder(tmp_path / "a" / "m", pooling="cls").model_id != first
    other = embedder(build_encoder(tmp_path / "c" / "m", seed=1).folder).model_id
    assert other != first, "other weights must make another collection version"
    config = tmp_path / "b" / "renamed" / "sentence_bert_config.json"
    config.write_text(config.read_text().replace("128", "64"))
    assert embedder(tmp_path / "b" / "renamed").model_id != first
    (tmp_path / "a" / "m" / "weights.bin").write_bytes(b"external data under any name")
    assert embedder(tmp_path / "a" / "m").model_id != first


def test_a_folder_that_cannot_run_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"embedder\.onnx\.path"):
        OnnxEmbedder(OnnxEmbedderOptions())
    with pytest.raises(ConfigError, match="not found"):
        embedder(tmp_path / "missing")
    fixture = build_encoder(tmp_path / "m")
    drop_tokenizer(fixture.folder)
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        embedder(fixture.folder)
    wider = build_encoder(tmp_path / "w")
    set_config_dim(wider.folder, 48)
    with pytest.raises(ConfigError, match="gives vectors of 32 dimensions"):
        embedder(wider.folder).embed_documents(TEXTS)
    dense = build_encoder(tmp_path / "d")
    modules = dense.folder / "modules.json"
    dense_layer = {
        "idx": 2,
        "name": "2",
        "path": "2_Dense",
        "type": "sentence_transformers.models.Dense",
    }
    write(modules, json.dumps([*json.loads(modules.read_text())[:2], dense_layer]))
    with pytest.raises(ConfigError, match="Dense layer"):
        embedder(dense.folder).embed_documents(TEXTS)


def test_the_cross_encoder_scores_pairs_as_the_model_does(tmp_path: Path) -> None:
    fixture = build_cross_encoder(tmp_path / "ce")
    reranker = OnnxCrossEncoder(OnnxCrossEncoderOptions(path=fixture.folder, threads=2))
    scores = reranker.score("database backup", TEXTS)
    expected = fixture.reference_scores("database backup", TEXTS)[:, 0]
    np.testing.assert_allclose(scores, expected, atol=1e-4)
    assert reranker.model_id == "onnx-cross-encoder:ce"
    labels = build_cross_encoder(tmp_path / "three", num_labels=3)
    with pytest.raises(ConfigError, match="gives 3 scores a pair: a reranker needs"):
        OnnxCrossEncoder(OnnxCrossEncoderOptions(path=labels.folder)).warm()


def test_a_changed_tokenizer_is_another_model_even_in_a_running_process(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m")
    before = embedder(fixture.folder)
    vectors = before.embed_documents(TEXTS)
    tokenizer = fixture.folder / "tokenizer.json"
    spec = json.loads(tokenizer.read_text())
    spec["normalizer"] = None  # no lower-casing: "Weekly" is no longer "weekly"
    tokenizer.write_text(json.dumps(spec))
    after = embedder(fixture.folder)
    assert after.model_id != before.model_id
    upper = [text.upper() for text in TEXTS]
    assert not np.allclose(after.embed_documents(upper), vectors, atol=1e-3)


def test_a_dense_layer_sets_the_width_and_needs_the_graphs_pooling(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m", output="sentence_embedding")
    modules = fixture.folder / "modules.json"
    dense = {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
    write(modules, json.dumps([*json.loads(modules.read_text())[:2], dense]))
    write(fixture.folder / "2_Dense" / "config.json", json.dumps({"out_features": 32}))
    model = embedder(fixture.folder)
    assert model.dim == 32 and model.embed_documents(TEXTS).shape == (3, 32)
    with pytest.raises(ConfigError, match="Dense layer after pooling"):
        embedder(fixture.folder, pooling="mean").embed_documents(TEXTS)
    write(fixture.folder / "2_Dense" / "config.json", json.dumps({"out_features": 16}))
    with pytest.raises(ConfigError, match="gives vectors of 32 dimensions, its configuration"):
        embedder(fixture.folder).embed_documents(TEXTS)


def test_settings_the_model_cannot_take_are_refused_up_front(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m", max_positions=64)
    with pytest.raises(ConfigError, match="max_length 100 is past the 64 positions"):
        embedder(fixture.folder, max_length=100)
    pooling = fixture.folder / "1_Pooling" / "config.json"
    write(pooling, json.dumps({**json.loads(pooling.read_text()), "pooling_mode_max_tokens": True}))
    with pytest.raises(ConfigError, match="pooling_mode_max_tokens: knowhub pools mean"):
        embedder(fixture.folder).embed_documents(TEXTS)
    with pytest.raises(ConfigError, match="no file inside"):
        embedder(fixture.folder, file="/etc/hostname")
