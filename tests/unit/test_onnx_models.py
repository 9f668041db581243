"""The ONNX model folders of tests/onnx_models.py are what they claim.

Each graph, run by a real ONNX Runtime on a padded batch, gives the numpy reference's
vectors (or the cross-encoder's logits); padding leaves a text's vector as it is alone; the
graphs check and record the opset asked; the files say what an optimum export says; texts
sharing words come out closer than unrelated ones whatever the seed; and the helpers that
break a folder break it the way they say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from numpy.typing import NDArray

from tests.onnx_models import (
    MODEL_FILE,
    POOLINGS,
    SPECIAL_TOKENS,
    TOKENIZER_FILES,
    EncoderFixture,
    break_opset,
    build_cross_encoder,
    build_encoder,
    drop_tokenizer,
    set_config_dim,
    vocabulary,
)

# Different lengths, so the batch pads two of them; one word ("unheardof") only letters spell.
TEXTS = [
    "weekly database backup to the server",
    "an invoice",
    "espresso coffee brewing at home, unheardof, before work every morning",
]
QUERY = "when does the database backup run"


def session(path: Path) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def feed(fx: EncoderFixture, inputs: list[Any]) -> dict[str, NDArray[np.int64]]:
    """The graph's inputs for texts (or pairs), padded to the longest, as a provider feeds it."""
    tokenizer = fx.tokenizer()
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(inputs)
    arrays = {
        "input_ids": np.array([e.ids for e in encodings], np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], np.int64),
    }
    if not fx.with_token_types:
        del arrays["token_type_ids"]
    return arrays


def pooled(states: NDArray[np.float32], mask: NDArray[np.int64], how: str) -> NDArray[np.float32]:
    """sentence-transformers' pooling of a padded batch by its mask, then L2 normalisation."""
    if how == "mean":
        vectors = (states * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    elif how == "cls":
        vectors = states[:, 0]
    else:
        vectors = states[np.arange(len(states)), mask.sum(axis=1) - 1]
    return normalised(vectors)


def normalised(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cosines(a: NDArray[np.float32], b: NDArray[np.float32]) -> NDArray[np.float32]:
    return (normalised(a) * normalised(b)).sum(axis=1)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("pooling", POOLINGS)
def test_last_hidden_state_pooled_matches_the_reference(tmp_path: Path, pooling: str) -> None:
    fx = build_encoder(tmp_path, pooling=pooling)
    inputs = feed(fx, TEXTS)
    assert (inputs["attention_mask"] == 0).any(axis=1).tolist() == [True, True, False]
    (states,) = session(fx.model_path).run(["last_hidden_state"], inputs)
    assert states.shape == (3, inputs["input_ids"].shape[1], fx.hidden)
    assert states.dtype == np.float32
    for row, ids, mask in zip(states, inputs["input_ids"], inputs["attention_mask"], strict=True):
        kept = ids[mask == 1].tolist()  # every token's state, not only the pooled vector
        np.testing.assert_allclose(row[mask == 1], fx.hidden_states(kept), atol=1e-4)
    vectors = pooled(states, inputs["attention_mask"], pooling)
    assert cosines(vectors, fx.reference(TEXTS)).min() >= 0.9999
    # The reference is the folder's pooling unless told, and the three differ.
    others = [fx.reference(TEXTS, pooling=how) for how in POOLINGS if how != pooling]
    assert all(cosines(vectors, other).min() < 0.999 for other in others)


def test_padding_leaves_a_texts_vector_as_it_is_alone(tmp_path: Path) -> None:
    fx = build_encoder(tmp_path)
    model = session(fx.model_path)
    inputs = feed(fx, TEXTS)
    (batch,) = model.run(None, inputs)
    batched = pooled(batch, inputs["attention_mask"], "mean")
    for i, text in enumerate(TEXTS):
        alone = feed(fx, [text])
        (states,) = model.run(None, alone)
        np.testing.assert_allclose(
            pooled(states, alone["attention_mask"], "mean")[0], batched[i], atol=1e-5
        )


@pytest.mark.parametrize("pooling", POOLINGS)
def test_sentence_embedding_output_matches_the_reference(tmp_path: Path, pooling: str) -> None:
    fx = build_encoder(tmp_path, pooling=pooling, output="sentence_embedding")
    model = session(fx.model_path)
    assert [o.name for o in model.get_outputs()] == ["sentence_embedding"]
    (vectors,) = model.run(None, feed(fx, TEXTS))
    assert vectors.shape == (3, fx.hidden)
    assert cosines(vectors, fx.reference(TEXTS)).min() >= 0.9999


def test_without_token_types_the_graph_takes_two_inputs(tmp_path: Path) -> None:
    fx = build_encoder(tmp_path, with_token_types=False)
    model = session(fx.model_path)
    assert [i.name for i in model.get_inputs()] == ["input_ids", "attention_mask"]
    inputs = feed(fx, TEXTS)
    (states,) = model.run(None, inputs)
    vectors = pooled(states, inputs["attention_mask"], "mean")
    assert cosines(vectors, fx.reference(TEXTS)).min() >= 0.9999
    assert read_json(tmp_path / "config.json")["type_vocab_size"] == 1


@pytest.mark.parametrize("opset", [17, 18])
def test_graphs_check_and_record_the_opset_asked(tmp_path: Path, opset: int) -> None:
    encoder = build_encoder(tmp_path / "encoder", opset=opset)
    cross = build_cross_encoder(tmp_path / "cross", opset=opset)
    for fx in (encoder, cross):
        onnx.checker.check_model(str(fx.model_path), full_check=True)
        model = onnx.load(str(fx.model_path))
        assert [(o.domain, o.version) for o in model.opset_import] == [("", opset)]
        assert {node.domain for node in model.graph.node} == {""}  # no com.microsoft fusions
        assert "LayerNormalization" in {node.op_type for node in model.graph.node}
        inputs = [i.name for i in model.graph.input]
        assert inputs == ["input_ids", "attention_mask", "token_type_ids"]


@pytest.mark.parametrize("num_labels", [1, 3])
def test_cross_encoder_logits_match_the_reference(tmp_path: Path, num_labels: int) -> None:
    fx = build_cross_encoder(tmp_path, num_labels=num_labels)
    inputs = feed(fx, [(QUERY, passage) for passage in TEXTS])
    assert set(inputs["token_type_ids"][0].tolist()) == {0, 1}  # the pair template's types
    (logits,) = session(fx.model_path).run(["logits"], inputs)
    expected = fx.reference_scores(QUERY, TEXTS)
    assert logits.shape == expected.shape == (3, num_labels)
    assert np.abs(logits - expected).max() < 1e-4
    assert len(set(expected[:, 0].round(6).tolist())) == 3  # the passages score apart
    config = read_json(tmp_path / "config.json")
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"] == {str(i): f"LABEL_{i}" for i in range(num_labels)}
    assert not (tmp_path / "modules.json").exists()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_texts_sharing_words_are_closer_than_unrelated_ones(tmp_path: Path, seed: int) -> None:
    fx = build_encoder(tmp_path, seed=seed)
    texts = [
        "weekly database backup to the server",
        "the database backup runs weekly on the server",
        "espresso coffee brewing at home",
    ]
    inputs = feed(fx, texts)
    (states,) = session(fx.model_path).run(None, inputs)
    vectors = pooled(states, inputs["attention_mask"], "mean")
    similar = vectors @ vectors.T
    assert similar[0, 1] > similar[0, 2] + 0.005
    assert similar[0, 1] > similar[1, 2] + 0.005


def test_seeds_give_different_weights(tmp_path: Path) -> None:
    one, two = build_encoder(tmp_path / "a", seed=1), build_encoder(tmp_path / "b", seed=2)
    assert cosines(one.reference(TEXTS), two.reference(TEXTS)).max() < 0.99


@pytest.mark.parametrize("pooling", POOLINGS)
def test_the_files_say_what_an_export_says(tmp_path: Path, pooling: str) -> None:
    build_encoder(tmp_path, hidden=48, heads=4, layers=1, max_positions=64, pooling=pooling)
    config = read_json(tmp_path / "config.json")
    assert config["model_type"] == "bert"
    assert (config["hidden_size"], config["num_attention_heads"]) == (48, 4)
    assert (config["num_hidden_layers"], config["max_position_embeddings"]) == (1, 64)
    assert config["vocab_size"] == len(vocabulary())
    assert read_json(tmp_path / "sentence_bert_config.json")["max_seq_length"] == 64
    modules = read_json(tmp_path / "modules.json")
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Normalize"]
    pool = read_json(tmp_path / "1_Pooling" / "config.json")
    assert pool["word_embedding_dimension"] == 48
    flags = {
        "cls": pool["pooling_mode_cls_token"],
        "mean": pool["pooling_mode_mean_tokens"],
        "last": pool["pooling_mode_lasttoken"],
    }
    assert flags == {how: how == pooling for how in POOLINGS}
    assert read_json(tmp_path / "tokenizer_config.json")["model_max_length"] == 64
    assert not (tmp_path / "config_sentence_transformers.json").exists()
    (output,) = onnx.load(str(tmp_path / MODEL_FILE)).graph.output
    assert output.type.tensor_type.shape.dim[2].dim_value == 48


def test_the_tokenizer_is_a_saved_bert_wordpiece(tmp_path: Path) -> None:
    fx = build_encoder(tmp_path)
    saved = read_json(tmp_path / "tokenizer.json")
    assert (saved["padding"], saved["truncation"]) == (None, None)
    assert saved["model"]["type"] == "WordPiece"
    specials = [t["content"] for t in saved["added_tokens"] if t["special"]]
    assert specials == list(SPECIAL_TOKENS)
    tokenizer = fx.tokenizer()
    encoding = tokenizer.encode("Weekly BACKUP of the Invoice database, espresso!")
    words = ["weekly", "backup", "of", "the", "invoice", "database", ",", "espresso", "!"]
    assert encoding.tokens == ["[CLS]", *words, "[SEP]"]
    assert tokenizer.encode("unheardof").tokens[1:3] == ["u", "##n"]  # no [UNK]
    pair = tokenizer.encode("backup", "a server")
    assert pair.tokens == ["[CLS]", "backup", "[SEP]", "a", "server", "[SEP]"]
    assert pair.type_ids == [0, 0, 0, 1, 1, 1]
    assert len(tokenizer.encode(" ".join(["word"] * 500)).ids) == fx.max_positions
    assert tokenizer.decode(encoding.ids) == "weekly backup of the invoice database, espresso!"


def test_prompts_are_written_and_the_reference_takes_a_prefix(tmp_path: Path) -> None:
    prompts = {"query": "query: ", "document": "passage: "}
    fx = build_encoder(tmp_path, prompts=prompts)
    written = read_json(tmp_path / "config_sentence_transformers.json")
    assert written == {"prompts": prompts, "default_prompt_name": None}
    inputs = feed(fx, [f"query: {text}" for text in TEXTS])
    (states,) = session(fx.model_path).run(None, inputs)
    vectors = pooled(states, inputs["attention_mask"], "mean")
    assert cosines(vectors, fx.reference(TEXTS, prefix="query: ")).min() >= 0.9999
    assert cosines(vectors, fx.reference(TEXTS)).max() < 0.9999


def test_break_opset_rewrites_the_import(tmp_path: Path) -> None:
    fx = build_encoder(tmp_path)
    break_opset(tmp_path, 7)
    model = onnx.load(str(fx.model_path))
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 7)]
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model)


def test_drop_tokenizer_removes_every_tokenizer_file(tmp_path: Path) -> None:
    build_encoder(tmp_path)
    assert all((tmp_path / name).is_file() for name in TOKENIZER_FILES)
    drop_tokenizer(tmp_path)
    assert not [name for name in TOKENIZER_FILES if (tmp_path / name).exists()]
    assert (tmp_path / MODEL_FILE).is_file()
    assert (tmp_path / "config.json").is_file()


def test_set_config_dim_makes_the_config_disagree_with_the_graph(tmp_path: Path) -> None:
    fx = build_encoder(tmp_path)
    set_config_dim(tmp_path, 64)
    assert read_json(tmp_path / "config.json")["hidden_size"] == 64
    assert read_json(tmp_path / "1_Pooling" / "config.json")["word_embedding_dimension"] == 64
    (states,) = session(fx.model_path).run(None, feed(fx, TEXTS))
    assert states.shape[-1] == fx.hidden == 32
    cross = build_cross_encoder(tmp_path / "cross")
    set_config_dim(cross.folder, 16)  # no 1_Pooling there: only config.json changes
    assert read_json(cross.folder / "config.json")["hidden_size"] == 16
