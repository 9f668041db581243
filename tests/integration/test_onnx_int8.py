"""``quantize: int8`` for a model the user brings: the graph rewritten to int8 products as
it loads (per-token activations, per-column weights, channels smoothed on calibration
texts), its vectors and scores against the float model's, and what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from knowhub.config.models import OnnxCrossEncoderOptions, OnnxEmbedderOptions
from knowhub.errors import ConfigError
from knowhub.providers.embedders.onnx_local import OnnxEmbedder
from knowhub.providers.local.engine import OnnxEngine
from knowhub.providers.local.quantize import SCHEME, inputs, measure, quantize
from knowhub.providers.rerankers.onnx_cross import OnnxCrossEncoder
from tests.onnx_models import build_cross_encoder, build_encoder

TEXTS = [
    "weekly database backup to the server",
    "espresso coffee brewing at home",
    "the invoice payment is due on friday",
    "ok",
]


def embedder(folder: Path, **options: object) -> OnnxEmbedder:
    return OnnxEmbedder(OnnxEmbedderOptions.model_validate({"path": folder, **options}))


@pytest.mark.parametrize("opset", [17, 18])  # ReduceMax's axes: an attribute, then an input
def test_int8_vectors_stay_the_models_and_are_another_version(tmp_path: Path, opset: int) -> None:
    fixture = build_encoder(tmp_path / "m", opset=opset, hidden=64, intermediate=128)
    model = embedder(fixture.folder, quantize="int8", threads=2)
    together = model.embed_documents(TEXTS)
    cosines = np.sum(together * fixture.reference(TEXTS), axis=1)
    assert cosines.min() >= 0.999, cosines
    assert model.load().quantised == 12, "q, k, v, attention output and both FFN matrices x 2"
    alone = np.vstack([model.embed_documents([text]) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    exact = embedder(fixture.folder)
    assert exact.load().quantised == 0
    assert model.model_id != exact.model_id, "int8 vectors are another collection version"
    assert embedder(fixture.folder, quantize="int8").model_id == model.model_id


def test_only_products_by_constant_matrices_become_int8(tmp_path: Path) -> None:
    fixture = build_encoder(tmp_path / "m")
    model = onnx.load(str(fixture.model_path))
    float_matmuls = sum(node.op_type == "MatMul" for node in model.graph.node)
    assert quantize(model) == 12
    kinds = [node.op_type for node in model.graph.node]
    assert kinds.count("MatMulIntegerToFloat") == 12
    assert kinds.count("MatMul") == float_matmuls - 12 == 4, "attention's own products stay"
    assert kinds.count("QuantizeLinear") == 2 * 4, "q, k and v share one quantisation"
    names = {tensor.name for tensor in model.graph.initializer}
    assert "encoder.layer.0.attention.self.query.weight" not in names, "float copy dropped"
    assert "embeddings.word_embeddings.weight" in names
    onnx.checker.check_model(model)


def _one_product(
    path: Path, weights: np.ndarray[Any, Any], opset: int = 17, relu: bool = False
) -> Path:
    """A graph of one ``x @ weights`` (x: [tokens, depth]), of ``relu(x)`` with ``relu``."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["tokens", weights.shape[0]])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["tokens", weights.shape[1]])
    nodes = [helper.make_node("Relu", ["x"], ["r"])] if relu else []
    nodes.append(helper.make_node("MatMul", ["r" if relu else "x", "w"], ["y"]))
    graph = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(weights, "w")])
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets)
    )
    onnx.save(model, str(path))
    return path


def _run(model: Any, x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    result: np.ndarray[Any, Any] = session.run(["y"], {"x": x})[0]
    return result


def test_smoothing_evens_out_an_outlier_channel(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    weights = rng.standard_normal((64, 16)).astype(np.float32)
    x = rng.standard_normal((40, 64)).astype(np.float32)
    x[:, 5] *= 60  # one channel spends the token's int8 range alone (a LayerNorm outlier)
    path = _one_product(tmp_path / "one.onnx", weights)
    exact = x @ weights
    plain = onnx.load(str(path))
    quantize(plain)
    smoothed = onnx.load(str(path))
    assert inputs(smoothed) == ["x"]
    peaks = measure(smoothed, [{"x": x[:20]}])
    assert [o.name for o in smoothed.graph.output] == ["y"], "measuring added no output"
    np.testing.assert_allclose(peaks["x"], np.abs(x[:20]).max(axis=0), rtol=1e-6)
    quantize(smoothed, peaks)
    error = {
        "plain": np.abs(_run(plain, x[20:]) - exact[20:]).mean(),
        "smoothed": np.abs(_run(smoothed, x[20:]) - exact[20:]).mean(),
    }
    assert error["smoothed"] * 2 < error["plain"], error
    zeros = np.zeros((3, 64), np.float32)
    np.testing.assert_array_equal(_run(smoothed, zeros), np.zeros((3, 16)))


def test_a_channel_silent_in_calibration_does_not_take_over_when_it_fires(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((64, 16)).astype(np.float32)
    seen = rng.standard_normal((40, 64)).astype(np.float32)
    seen[:, 5] = -1.0  # the unit never fires on the calibration texts…
    later = rng.standard_normal((40, 64)).astype(np.float32)
    later[:, 5] = 0.5  # …and a little afterwards
    model = onnx.load(str(_one_product(tmp_path / "relu.onnx", weights, relu=True)))
    quantize(model, measure(model, [{"x": seen}]))
    got, exact = _run(model, later), np.maximum(later, 0) @ weights
    cosines = (
        np.sum(got * exact, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(exact, axis=1)
    )
    assert cosines.min() >= 0.999, cosines  # unfloored: every row 0, cosines NaN


def test_what_cannot_be_quantised_is_refused_with_the_fix(tmp_path: Path) -> None:
    weights = np.ones((8, 4), np.float32)
    old = onnx.load(str(_one_product(tmp_path / "old.onnx", weights, opset=12)))
    with pytest.raises(ConfigError, match="opset 13 or newer, this one is opset 12"):
        quantize(old)
    nothing = onnx.load(str(_one_product(tmp_path / "n.onnx", weights)))
    nothing.graph.node[0].input[1] = "x"  # x @ x: no constant matrix
    del nothing.graph.initializer[:]
    with pytest.raises(ConfigError, match="no float32 MatMul with constant weights"):
        quantize(nothing)
    fixture = build_encoder(tmp_path / "m")
    (fixture.model_path).write_bytes(b"\x08\x07junk")
    with pytest.raises(ConfigError, match="cannot be read to quantise"):
        embedder(fixture.folder, quantize="int8").embed_documents(TEXTS)


def test_the_int8_cross_encoder_scores_as_the_model_does(tmp_path: Path) -> None:
    fixture = build_cross_encoder(tmp_path / "ce", hidden=64, intermediate=128)
    options = OnnxCrossEncoderOptions(path=fixture.folder, quantize="int8", threads=2)
    reranker = OnnxCrossEncoder(options)
    scores = np.asarray(reranker.score("database backup", TEXTS))
    expected = fixture.reference_scores("database backup", TEXTS)[:, 0]
    moved = scores - expected  # mostly one shift for all: it leaves the order alone
    assert np.abs(moved).max() <= 0.01 * np.abs(expected).max(), (scores, expected)
    assert np.ptp(moved) <= 0.2 * np.ptp(expected), (scores, expected)
    assert list(np.argsort(scores)) == list(np.argsort(expected))
    assert reranker.load().quantised == 14, "with the pooler and the classifier"
    assert reranker.model_id == "onnx-cross-encoder:ce:int8"


def test_the_int8_graph_is_built_once_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = build_encoder(tmp_path / "m")
    cache = tmp_path / "data" / "models"
    options = OnnxEmbedderOptions(path=fixture.folder, quantize="int8")
    built = OnnxEmbedder(options, cache)
    vectors = built.embed_documents(TEXTS)
    [kept] = (cache / f"onnx-int8-{SCHEME}").glob("*.onnx")
    assert kept.name.startswith(built.folder.digest[:32])

    def rebuilt(engine: OnnxEngine) -> bytes:
        raise AssertionError("the cached graph was built again")

    monkeypatch.setattr(OnnxEngine, "_int8", rebuilt)
    again = OnnxEngine(built.spec)
    assert again.quantised == 12, "the count travels in the graph's metadata"
    row = again.run(again.encode(TEXTS[:1]), built.output)[0].mean(axis=0)
    np.testing.assert_allclose(row / np.linalg.norm(row), vectors[0], atol=1e-6)
    monkeypatch.undo()
    kept.write_bytes(b"\x08\x07damaged")  # a disk error: built again, kept again
    mended = OnnxEngine(built.spec)
    assert mended.quantised == 12 and kept.stat().st_size > 1000
