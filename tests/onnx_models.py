"""Tiny random-weight model folders laid out as ``optimum-cli export onnx`` leaves them.

Tests of the "ONNX embedder from a local folder" and "ONNX cross-encoder" providers need a
real folder (model.onnx, config.json, tokenizer.json, sentence-transformers' files) without
downloading a model. The graph is a BERT encoder of standard ONNX ops only, so any ONNX
Runtime runs it, and each fixture carries its weights and a numpy forward pass of them: a
test compares the provider's output with ``reference``, not the runtime with itself. The
weights are seeded and small, which keeps attention near-uniform and a token's vector mostly
its own embedding: texts sharing words come out closer than unrelated ones, as when trained.
The helpers at the end break a folder the ways a ``models check`` must name.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from numpy.typing import NDArray
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

__all__ = [
    "MODEL_FILE",
    "POOLINGS",
    "SPECIAL_TOKENS",
    "TOKENIZER_FILES",
    "CrossEncoderFixture",
    "EncoderFixture",
    "break_opset",
    "build_cross_encoder",
    "build_encoder",
    "build_tokenizer",
    "drop_tokenizer",
    "set_config_dim",
    "vocabulary",
    "write_tokenizer",
]

MODEL_FILE = "model.onnx"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = SPECIAL_TOKENS
# What HF's save_pretrained writes for a BERT tokenizer; drop_tokenizer removes them all, so a
# loader cannot fall back on vocab.txt.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
POOLINGS = ("mean", "cls", "last")
SHAPE_FIELDS = ("hidden", "layers", "heads", "intermediate", "max_positions", "vocab_size", "opset")
OUTPUTS = ("last_hidden_state", "sentence_embedding")
LN_EPS = 1e-12  # BERT's layer_norm_eps, in config.json and in the graph alike
MASK_BIAS = -1e4  # what (1 - mask) is scaled by before the softmax, as HF's BERT does
MIN_OPSET = 17  # LayerNormalization's first opset

# Common English words, then the topics tests search for (backups, invoices, coffee, ...).
# Words not listed still tokenise without [UNK]: the letters and ##letters below spell them.
WORD_TEXT = """
the a an and or but not no yes of to in on at by for from with about into over under after
before between through during without within up down out off again then than so as if when
where why how what which who whom this that these those here there all any both each few
more most other some such only own same very can will just should now is are was were be
been being have has had do does did done make makes made get gets got go goes went run runs
ran use used uses using take took see saw know knew think want need find found give gave
tell told work works worked call called try tried keep kept start started stop stopped show
shown set put read write written send sent move moved turn turned help helped i you he she
it we they me him her us them my your his its our their one two three four five six seven
eight nine ten first second last next new old good bad great small large big long short high
low early late fast slow hot cold warm open close closed full empty easy hard day days week
weekly month monthly year years today night morning evening hour hours minute minutes time
home house room office city country world people person team company customer customers
user users account accounts name number list file files folder folders data report reports
page pages document documents text note notes question questions answer answers problem
problems change changes system systems service services network internet email message
backup backups database databases server servers disk disks storage restore snapshot
snapshots cloud copy copies schedule scheduled nightly daily log logs error errors
invoice invoices payment payments pay paid bill billing price prices cost costs tax taxes
bank card money order orders refund refunds receipt due amount total budget
coffee espresso brewing brew beans bean roast roasted grinder grind milk cup cups tea water
kitchen recipe recipes cook cooking bake baking bread sugar
python code software install version update upgrade release build test tests bug bugs fix
password login security key keys access permission user admin config configuration
search index query queries vector vectors model models embedding embeddings learning
machine language languages english word words sentence sentences book books library
music song songs movie movies game games sport football weather rain snow sun summer
winter garden tree trees flower flowers dog dogs cat cats bird car cars train trains bus
road travel trip flight hotel school student students teacher class lesson health doctor
"""
WORDS = WORD_TEXT.split()
PIECES = [f"##{p}" for p in ("s", "es", "ed", "ing", "er", "ly", "ion", "al", "ment", "ness")]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
PUNCTUATION = list(".,;:!?'\"()[]-/&%$#@*+=<>_")

F32 = NDArray[np.float32]
F64 = NDArray[np.float64]


def vocabulary() -> list[str]:
    """Specials first (ids 0-4, as BERT's PAD=0 that padding relies on), then the rest, once."""
    tokens = [*SPECIAL_TOKENS, *PUNCTUATION, *LETTERS, *(f"##{c}" for c in LETTERS)]
    return list(dict.fromkeys([*tokens, *PIECES, *WORDS]))


def build_tokenizer() -> Tokenizer:
    """BERT's uncased WordPiece pipeline, built offline; no padding or truncation in it,
    as HF saves a tokenizer (the provider under test must set them itself)."""
    vocab = {token: i for i, token in enumerate(vocabulary())}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=UNK, max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A {SEP}",
        pair=f"{CLS} $A {SEP} $B:1 {SEP}:1",
        special_tokens=[(CLS, vocab[CLS]), (SEP, vocab[SEP])],
    )
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))  # as added tokens, marked special
    return tokenizer


def write_tokenizer(folder: Path, max_length: int) -> None:
    """The tokenizer files of an export: tokenizer.json, tokenizer_config.json (which holds
    model_max_length), special_tokens_map.json and vocab.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer().save(str(folder / "tokenizer.json"), pretty=True)
    (folder / "vocab.txt").write_text("".join(f"{t}\n" for t in vocabulary()), encoding="utf-8")
    names = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")
    specials = dict(zip(names, SPECIAL_TOKENS, strict=True))
    added = {
        str(i): {"content": token, "lstrip": False, "normalized": False, "rstrip": False}
        | {"single_word": False, "special": True}
        for i, token in enumerate(SPECIAL_TOKENS)
    }
    config = {
        "added_tokens_decoder": added,
        "clean_up_tokenization_spaces": True,
        "do_basic_tokenize": True,
        "do_lower_case": True,
        "model_max_length": max_length,
        "never_split": None,
        "strip_accents": None,
        "tokenize_chinese_chars": True,
        "tokenizer_class": "BertTokenizer",
        **specials,
    }
    _write_json(folder / "tokenizer_config.json", config)
    _write_json(folder / "special_tokens_map.json", dict(sorted(specials.items())))


@dataclass(frozen=True)
class EncoderFixture:
    """A written encoder folder, its weights and shape, and a numpy forward pass of them.

    Linear weights are stored [in, out], as the export's MatMul initializers take them
    (torch keeps [out, in]); names follow HF's BertModel state dict.
    """

    folder: Path
    weights: dict[str, F32]
    hidden: int
    layers: int
    heads: int
    intermediate: int
    max_positions: int
    vocab_size: int
    opset: int
    pooling: str
    output: str
    with_token_types: bool
    prompts: dict[str, str] | None

    @property
    def model_path(self) -> Path:
        return self.folder / MODEL_FILE

    def tokenizer(self) -> Tokenizer:
        """The folder's own tokenizer.json, cut at max_positions (the graph has no more)."""
        tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=self.max_positions)
        return tokenizer

    def hidden_states(self, ids: Sequence[int], types: Sequence[int] | None = None) -> F64:
        """One unpadded sequence's last_hidden_state [seq, hidden], in float64 numpy."""
        w = {name: value.astype(np.float64) for name, value in self.weights.items()}
        type_ids = list(types) if types is not None and self.with_token_types else [0] * len(ids)
        x = (
            w["embeddings.word_embeddings.weight"][list(ids)]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][type_ids]
        )
        x = _np_layer_norm(x, w, "embeddings.LayerNorm")
        dh = self.hidden // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (
                _np_linear(x, w, f"{p}attention.self.{n}").reshape(len(ids), self.heads, dh)
                for n in ("query", "key", "value")
            )
            scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(dh)
            probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            context = np.einsum("hqk,khd->qhd", probs, v).reshape(len(ids), self.hidden)
            attended = x + _np_linear(context, w, f"{p}attention.output.dense")
            x = _np_layer_norm(attended, w, f"{p}attention.output.LayerNorm")
            inner = _np_gelu(_np_linear(x, w, f"{p}intermediate.dense"))
            x = _np_layer_norm(
                x + _np_linear(inner, w, f"{p}output.dense"), w, f"{p}output.LayerNorm"
            )
        return x

    def reference(self, texts: list[str], pooling: str | None = None, prefix: str = "") -> F32:
        """L2-normalised sentence vectors [len(texts), hidden] of ``prefix + text``, pooled by
        ``pooling`` (the folder's own by default); each text runs alone, so unpadded."""
        how = pooling or self.pooling
        if how not in POOLINGS:
            raise ValueError(f"pooling {how!r} is none of {POOLINGS}")
        vectors = []
        for encoding in self.tokenizer().encode_batch([prefix + text for text in texts]):
            states = self.hidden_states(encoding.ids, encoding.type_ids)
            pooled = {"mean": states.mean(axis=0), "cls": states[0], "last": states[-1]}[how]
            vectors.append(pooled / np.linalg.norm(pooled))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.hidden)


@dataclass(frozen=True)
class CrossEncoderFixture(EncoderFixture):
    """An encoder with BERT's pooler (dense + tanh on [CLS]) and a classifier to num_labels."""

    num_labels: int

    def reference_scores(self, query: str, passages: list[str]) -> F32:
        """The logits [len(passages), num_labels] of each (query, passage) pair, in numpy:
        the pair template's ids and its token types 0 (query) / 1 (passage)."""
        w = {name: value.astype(np.float64) for name, value in self.weights.items()}
        rows = []
        for passage in passages:
            encoding = self.tokenizer().encode(query, passage)
            cls = self.hidden_states(encoding.ids, encoding.type_ids)[:1]
            pooled = np.tanh(_np_linear(cls, w, "pooler.dense"))
            rows.append(_np_linear(pooled, w, "classifier")[0])
        return np.asarray(rows, dtype=np.float32).reshape(len(passages), self.num_labels)


def build_encoder(
    folder: Path,
    *,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    intermediate: int = 64,
    max_positions: int = 128,
    seed: int = 0,
    opset: int = 17,
    pooling: str = "mean",
    with_token_types: bool = True,
    output: str = "last_hidden_state",
    prompts: dict[str, str] | None = None,
) -> EncoderFixture:
    """Write a sentence-transformers model folder as exported to ONNX, and describe it.

    ``output="sentence_embedding"`` puts the pooling (per ``pooling``, unnormalised) in the
    graph, as some exports do; otherwise the graph ends at last_hidden_state [batch, seq,
    hidden]. ``prompts`` go to config_sentence_transformers.json.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r} is none of {POOLINGS}")
    if output not in OUTPUTS:
        raise ValueError(f"output {output!r} is none of {OUTPUTS}")
    fixture = EncoderFixture(
        folder=folder,
        weights={},
        **_shape(hidden, layers, heads, intermediate, max_positions, opset),
        pooling=pooling,
        output=output,
        with_token_types=with_token_types,
        prompts=prompts,
    )
    fixture.weights.update(_random_weights(fixture, seed, num_labels=0))
    graph = _Graph(fixture.weights)
    states = _encoder_graph(graph, fixture)
    if output == "sentence_embedding":
        result = _pool_graph(graph, states, pooling, hidden)
        dims: list[str | int] = ["batch_size", hidden]
    else:
        result, dims = states, ["batch_size", "sequence_length", hidden]
    graph.save(fixture, graph.rename(result, output), dims)
    _write_json(folder / "config.json", _bert_config(fixture, ["BertModel"], {}))
    _write_sentence_transformers(fixture)
    write_tokenizer(folder, max_positions)
    return fixture


def build_cross_encoder(
    folder: Path,
    *,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    intermediate: int = 64,
    max_positions: int = 128,
    seed: int = 0,
    opset: int = 17,
    with_token_types: bool = True,
    num_labels: int = 1,
) -> CrossEncoderFixture:
    """Write a BertForSequenceClassification folder as exported to ONNX (output ``logits``
    [batch, num_labels]), as a cross-encoder reranker ships, and describe it."""
    fixture = CrossEncoderFixture(
        folder=folder,
        weights={},
        **_shape(hidden, layers, heads, intermediate, max_positions, opset),
        pooling="cls",
        output="logits",
        with_token_types=with_token_types,
        prompts=None,
        num_labels=num_labels,
    )
    fixture.weights.update(_random_weights(fixture, seed, num_labels=num_labels))
    graph = _Graph(fixture.weights)
    states = _encoder_graph(graph, fixture)
    cls = graph.op("Gather", states, graph.const("cls_index", np.array(0, np.int64)), axis=1)
    pooled = graph.op("Tanh", graph.linear(cls, "pooler.dense"))
    logits = graph.rename(graph.linear(pooled, "classifier"), "logits")
    graph.save(fixture, logits, ["batch_size", num_labels])
    labels = {str(i): f"LABEL_{i}" for i in range(num_labels)}
    head = {"id2label": labels, "label2id": {name: int(i) for i, name in labels.items()}}
    _write_json(
        folder / "config.json", _bert_config(fixture, ["BertForSequenceClassification"], head)
    )
    write_tokenizer(folder, max_positions)
    return fixture


def break_opset(folder: Path, opset: int) -> None:
    """Rewrite model.onnx's default-domain opset import to ``opset`` (e.g. 7, which has no
    LayerNormalization): the graph no longer checks, and a runtime should refuse it."""
    model = onnx.load(str(folder / MODEL_FILE))
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = opset
    onnx.save(model, str(folder / MODEL_FILE))


def drop_tokenizer(folder: Path) -> None:
    """Remove every tokenizer file, as an export copied without them would be."""
    for name in TOKENIZER_FILES:
        (folder / name).unlink(missing_ok=True)


def set_config_dim(folder: Path, dim: int) -> None:
    """Make config.json (hidden_size) and 1_Pooling (word_embedding_dimension) claim ``dim``,
    which the graph's output no longer matches."""
    for path, key in (
        (folder / "config.json", "hidden_size"),
        (folder / "1_Pooling" / "config.json", "word_embedding_dimension"),
    ):
        if path.exists():
            config = json.loads(path.read_text(encoding="utf-8"))
            _write_json(path, config | {key: dim})


class _Graph:
    """Collects nodes and initializers; each op gets a fresh output name."""

    def __init__(self, weights: dict[str, F32]) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers = {n: numpy_helper.from_array(w, n) for n, w in weights.items()}
        self.count = 0

    def const(self, name: str, value: NDArray[Any]) -> str:
        self.initializers.setdefault(name, numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self.count += 1
        out = f"/{op_type}_{self.count}_output_0"
        node = helper.make_node(op_type, list(inputs), [out], f"/{op_type}_{self.count}", **attrs)
        self.nodes.append(node)
        return out

    def rename(self, tensor: str, name: str) -> str:
        self.nodes.append(helper.make_node("Identity", [tensor], [name], f"/{name}"))
        return name

    def linear(self, x: str, prefix: str) -> str:
        return self.op("Add", self.op("MatMul", x, f"{prefix}.weight"), f"{prefix}.bias")

    def layer_norm(self, x: str, prefix: str) -> str:
        scale, bias = f"{prefix}.weight", f"{prefix}.bias"
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=LN_EPS)

    def save(self, fixture: EncoderFixture, output: str, dims: list[str | int]) -> None:
        """Write model.onnx with optimum's input names and dynamic axes."""
        axes = ["batch_size", "sequence_length"]
        names = ["input_ids", "attention_mask"] + ["token_type_ids"] * fixture.with_token_types
        inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, axes) for n in names]
        outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, dims)]
        graph = helper.make_graph(
            self.nodes, "main_graph", inputs, outputs, list(self.initializers.values())
        )
        opsets = [helper.make_opsetid("", fixture.opset)]
        model = helper.make_model(
            graph,
            opset_imports=opsets,
            ir_version=helper.find_min_ir_version_for(opsets),
            producer_name="knowhub-tests",
        )
        fixture.folder.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(fixture.model_path))


def _shape(
    hidden: int, layers: int, heads: int, intermediate: int, max_positions: int, opset: int
) -> dict[str, int]:
    if opset < MIN_OPSET:
        raise ValueError(f"opset {opset} has no LayerNormalization (needs >= {MIN_OPSET})")
    if hidden % heads:
        raise ValueError(f"hidden {hidden} does not split into {heads} heads")
    sizes = (hidden, layers, heads, intermediate, max_positions, len(vocabulary()), opset)
    return dict(zip(SHAPE_FIELDS, sizes, strict=True))


def _random_weights(fx: EncoderFixture, seed: int, num_labels: int) -> dict[str, F32]:
    """Seeded normal weights, small enough that every LayerNorm input is well-conditioned.
    Positions get less than words so a text's vector is mostly its words'."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 0.05) -> F32:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w: dict[str, F32] = {
        "embeddings.word_embeddings.weight": normal(fx.vocab_size, fx.hidden),
        "embeddings.position_embeddings.weight": normal(fx.max_positions, fx.hidden, scale=0.02),
        "embeddings.token_type_embeddings.weight": normal(1 + fx.with_token_types, fx.hidden),
    }
    norms = ["embeddings.LayerNorm"]
    linears = {"pooler.dense": (fx.hidden, fx.hidden)} if num_labels else {}
    for i in range(fx.layers):
        p = f"encoder.layer.{i}."
        for name in ("self.query", "self.key", "self.value", "output.dense"):
            linears[f"{p}attention.{name}"] = (fx.hidden, fx.hidden)
        linears[f"{p}intermediate.dense"] = (fx.hidden, fx.intermediate)
        linears[f"{p}output.dense"] = (fx.intermediate, fx.hidden)
        norms += [f"{p}attention.output.LayerNorm", f"{p}output.LayerNorm"]
    if num_labels:
        linears["classifier"] = (fx.hidden, num_labels)
    for name, (n_in, n_out) in linears.items():
        w[f"{name}.weight"], w[f"{name}.bias"] = normal(n_in, n_out), normal(n_out, scale=0.02)
    for name in norms:
        w[f"{name}.weight"] = 1 + normal(fx.hidden, scale=0.02)
        w[f"{name}.bias"] = normal(fx.hidden, scale=0.02)
    return w


def _encoder_graph(g: _Graph, fx: EncoderFixture) -> str:
    """Embeddings, their LayerNorm and the layers; returns last_hidden_state's tensor."""
    words = g.op("Gather", "embeddings.word_embeddings.weight", "input_ids", axis=0)
    seq = g.op("Shape", "input_ids", start=1, end=2)  # [sequence_length]
    zero = g.const("zero", np.array([0], np.int64))
    positions = g.op("Slice", "embeddings.position_embeddings.weight", zero, seq, zero)
    types = "token_type_ids" if fx.with_token_types else g.const("type_id", np.array(0, np.int64))
    token_types = g.op("Gather", "embeddings.token_type_embeddings.weight", types, axis=0)
    x = g.layer_norm(
        g.op("Add", g.op("Add", words, positions), token_types), "embeddings.LayerNorm"
    )
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    hidden_mask = g.op("Sub", g.const("f_one", np.array(1, np.float32)), mask)
    bias = g.op("Mul", hidden_mask, g.const("mask_bias", np.array(MASK_BIAS, np.float32)))
    key_bias = g.op("Unsqueeze", bias, g.const("axes_1_2", np.array([1, 2], np.int64)))
    for i in range(fx.layers):
        x = _layer_graph(g, x, f"encoder.layer.{i}.", fx, key_bias)
    return x


def _layer_graph(g: _Graph, x: str, p: str, fx: EncoderFixture, key_bias: str) -> str:
    """One post-LN transformer layer: attention with the additive key mask, then erf-GELU FFN."""
    dh = fx.hidden // fx.heads
    split = g.const("split_heads", np.array([0, 0, fx.heads, dh], np.int64))
    q, k, v = (
        g.op("Reshape", g.linear(x, f"{p}attention.self.{n}"), split)
        for n in ("query", "key", "value")
    )
    q = g.op("Transpose", q, perm=[0, 2, 1, 3])  # [batch, heads, seq, dh]
    k = g.op("Transpose", k, perm=[0, 2, 3, 1])  # [batch, heads, dh, seq]
    v = g.op("Transpose", v, perm=[0, 2, 1, 3])
    scale = g.const("attention_scale", np.array(1 / math.sqrt(dh), np.float32))
    scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), key_bias)
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
    merge = g.const("merge_heads", np.array([0, 0, fx.hidden], np.int64))
    context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
    attended = g.op("Add", x, g.linear(context, f"{p}attention.output.dense"))
    x = g.layer_norm(attended, f"{p}attention.output.LayerNorm")
    inner = g.linear(x, f"{p}intermediate.dense")
    erf = g.op("Erf", g.op("Mul", inner, g.const("inv_sqrt2", np.array(0.5**0.5, np.float32))))
    half = g.const("half", np.array(0.5, np.float32))
    gelu = g.op(
        "Mul", g.op("Mul", inner, half), g.op("Add", erf, g.const("f_one", np.array(1, np.float32)))
    )
    return g.layer_norm(g.op("Add", x, g.linear(gelu, f"{p}output.dense")), f"{p}output.LayerNorm")


def _pool_graph(g: _Graph, states: str, pooling: str, hidden: int) -> str:
    """sentence_embedding [batch, hidden] from last_hidden_state, by the mask (right padding)."""
    if pooling == "cls":
        return g.op("Gather", states, g.const("cls_index", np.array(0, np.int64)), axis=1)
    axis1 = g.const("axis_1", np.array([1], np.int64))
    if pooling == "last":
        count = g.op("ReduceSum", "attention_mask", axis1, keepdims=1)  # [batch, 1]
        last = g.op("Sub", count, g.const("i_one", np.array(1, np.int64)))
        index = g.op("Unsqueeze", last, g.const("axis_2", np.array([2], np.int64)))
        index = g.op("Expand", index, g.const("row", np.array([1, 1, hidden], np.int64)))
        gathered = g.op("GatherElements", states, index, axis=1)  # [batch, 1, hidden]
        return g.op("Squeeze", gathered, axis1)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    weights = g.op("Unsqueeze", mask, g.const("axis_2", np.array([2], np.int64)))
    total = g.op("ReduceSum", g.op("Mul", states, weights), axis1, keepdims=0)
    count = g.op("ReduceSum", mask, axis1, keepdims=1)
    count = g.op("Max", count, g.const("min_count", np.array(1e-9, np.float32)))
    return g.op("Div", total, count)


def _bert_config(fx: EncoderFixture, architectures: list[str], head: dict[str, Any]) -> Any:
    """config.json as transformers writes it for BERT (keys sorted, as to_json_string does)."""
    config = {
        "architectures": architectures,
        "attention_probs_dropout_prob": 0.1,
        "classifier_dropout": None,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": fx.hidden,
        "initializer_range": 0.02,
        "intermediate_size": fx.intermediate,
        "layer_norm_eps": LN_EPS,
        "max_position_embeddings": fx.max_positions,
        "model_type": "bert",
        "num_attention_heads": fx.heads,
        "num_hidden_layers": fx.layers,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "transformers_version": "4.46.3",
        "type_vocab_size": 1 + fx.with_token_types,
        "use_cache": True,
        "vocab_size": fx.vocab_size,
    }
    return dict(sorted((config | head).items()))


def _write_sentence_transformers(fx: EncoderFixture) -> None:
    """modules.json (Transformer, Pooling, Normalize), sentence_bert_config.json,
    1_Pooling/config.json and, with prompts, config_sentence_transformers.json."""
    kinds = (("", "Transformer"), ("1_Pooling", "Pooling"), ("2_Normalize", "Normalize"))
    modules = [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (path, kind) in enumerate(kinds)
    ]
    _write_json(fx.folder / "modules.json", modules)
    _write_json(
        fx.folder / "sentence_bert_config.json",
        {"max_seq_length": fx.max_positions, "do_lower_case": False},
    )
    modes = {"cls_token": "cls", "mean_tokens": "mean", "lasttoken": "last"}
    modes |= dict.fromkeys(("max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens"), "")
    flags = {f"pooling_mode_{mode}": fx.pooling == name for mode, name in modes.items()}
    pooling = {"word_embedding_dimension": fx.hidden, **flags, "include_prompt": True}
    (fx.folder / "1_Pooling").mkdir(exist_ok=True)
    _write_json(fx.folder / "1_Pooling" / "config.json", pooling)
    if fx.prompts is not None:
        st_config = {"prompts": fx.prompts, "default_prompt_name": None}
        _write_json(fx.folder / "config_sentence_transformers.json", st_config)


def _np_linear(x: F64, w: dict[str, F64], prefix: str) -> F64:
    return x @ w[f"{prefix}.weight"] + w[f"{prefix}.bias"]


def _np_layer_norm(x: F64, w: dict[str, F64], prefix: str) -> F64:
    centred = x - x.mean(axis=-1, keepdims=True)
    normed: F64 = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + LN_EPS)
    return normed * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]


def _np_gelu(x: F64) -> F64:
    """BERT's exact GELU, 0.5 x (1 + erf(x / sqrt 2)); numpy has no erf, math has."""
    erf = np.asarray(np.frompyfunc(math.erf, 1, 1)(x / math.sqrt(2)), dtype=np.float64)
    return 0.5 * x * (1 + erf)


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
