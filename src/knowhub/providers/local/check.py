"""``knowhub models check PATH``: is this folder a model knowhub can run, and how?

Step by step, each on what the previous one found: the folder's files, the graph's opset
and operators (``onnx.checker``), ONNX Runtime loading it, its inputs and outputs, the
dimension its configuration declares against the one it gives, and a test encode (or a
test score, for a cross-encoder). The first failure ends the check with what to do.
With ``quantize="int8"`` it also loads the graph quantised at load time and reports its
parity with the float graph: the cosines of their vectors (the scores' largest move and
whether they order the passages alike, for a cross-encoder) and the time of each.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.config.models import OnnxCrossEncoderOptions, OnnxEmbedderOptions
from knowhub.errors import ConfigError, KnowhubError
from knowhub.providers.local.folder import ModelFolder, open_folder

__all__ = ["MIN_OPSET", "Report", "check_folder"]

MIN_OPSET = 7  # ONNX Runtime guarantees nothing below
_SAMPLE = ["How often is the database backed up?", "The backup runs every night at two."]
# Texts of several lengths, languages and kinds for the int8 parity report.
_PARITY = [
    *_SAMPLE,
    "Restart the service after changing its configuration file.",
    "The index is rebuilt from the SQLite file whenever it is found missing or stale, so "
    "deleting the cache folder loses nothing but the time to rebuild it.",
    "Error 0x80070005: access denied when writing to C:\\ProgramData\\app\\log.txt",
    "def parse(path: str) -> dict[str, int]: return json.loads(Path(path).read_text())",
    "数据库每天凌晨两点自动备份，备份文件保留三十天。",
    "如何更改服务器的监听端口？",
    "Резервная копия базы данных создаётся каждую ночь в два часа.",
    "Как изменить порт, который слушает сервер?",
    "Quarterly revenue rose 12% to $4.2 billion, driven by cloud subscriptions in Europe "
    "and Asia, while hardware sales fell for the third quarter in a row.",
    "ok",
]


@dataclass
class Report:
    """What the check found: one line per step, the kind of model, its settings."""

    kind: str = ""
    lines: list[str] = field(default_factory=list)
    error: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error


def check_folder(path: Path, file: str = "", kind: str = "auto", quantize: str = "none") -> Report:
    """Check the model folder ``path`` (``kind``: embedder, cross-encoder or auto), and
    with ``quantize="int8"`` its int8 graph against the float one."""
    report = Report()
    try:
        folder = open_folder(path, file)
        report.lines.append(f"files: {folder.graph.relative_to(folder.root)}, tokenizer.json")
        report.lines.append(_opset(folder))
        report.kind = kind if kind != "auto" else _kind(folder)
        test = _cross_encoder if report.kind == "cross-encoder" else _embedder
        try:
            test(folder, report)
            if quantize == "int8":
                parity = _cross_parity if report.kind == "cross-encoder" else _embedder_parity
                parity(folder, report)
        except KnowhubError:
            raise
        except Exception as exc:  # ONNX Runtime failing the test run: a graph of fixed shapes…
            raise ConfigError(
                f"a test run of {folder.graph} failed ({type(exc).__name__}: {exc}): "
                "re-export it with dynamic batch and sequence axes (optimum-cli does)"
            ) from exc
    except KnowhubError as exc:
        report.error = str(exc)
    return report


def _opset(folder: ModelFolder) -> str:
    """The graph's opset, and that every operator exists at it."""
    import onnx

    try:
        model = onnx.load(str(folder.graph), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError, an OSError: not an ONNX file
        raise ConfigError(
            f"{folder.graph} is not an ONNX model ({type(exc).__name__}: {exc}): the file is "
            "damaged or of another format; export the model again"
        ) from exc
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < MIN_OPSET:
        raise ConfigError(
            f"{folder.graph} declares opset {opset}; ONNX Runtime runs {MIN_OPSET} and above: "
            "re-export it (optimum-cli export onnx --opset 17 --model NAME FOLDER)"
        )
    try:
        onnx.checker.check_model(str(folder.graph))
    except onnx.checker.ValidationError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(
            f"{folder.graph} (opset {opset}) is not a valid graph: {first} — an operator "
            "newer than the opset it declares, or a damaged file: re-export it "
            "(optimum-cli export onnx --opset 17 --model NAME FOLDER)"
        ) from exc
    return f"graph: opset {opset}, {len(model.graph.node)} nodes, operators valid"


def _kind(folder: ModelFolder) -> str:
    architectures = folder.config("config.json").get("architectures") or []
    if any("SequenceClassification" in str(a) for a in architectures):
        return "cross-encoder"
    return "embedder"


def _embedder(folder: ModelFolder, report: Report) -> None:
    from knowhub.providers.embedders.onnx_local import OnnxEmbedder

    embedder = OnnxEmbedder(OnnxEmbedderOptions(path=folder.root, file=_file(folder)))
    engine = embedder.load()
    embedder.pooled(_SAMPLE[:1], is_query=True)  # a first run sets ONNX Runtime up
    start = time.perf_counter()
    raw = embedder.pooled(_SAMPLE, is_query=False)
    took = (time.perf_counter() - start) * 1000 / len(_SAMPLE)
    report.lines.append(f"inputs: {', '.join(engine.inputs)}; output: {embedder.output}")
    declared = folder.dim()
    if declared is not None and declared != raw.shape[1]:
        raise ConfigError(
            f"{folder.root}'s configuration says {declared} dimensions (config.json hidden_size "
            f"/ 1_Pooling word_embedding_dimension), the graph gives {raw.shape[1]}: fix the "
            "files, or the export is of another model"
        )
    if not np.all(np.isfinite(raw)) or not np.all(np.linalg.norm(raw, axis=1) > 0):
        raise ConfigError(f"{folder.graph} gives non-finite or zero vectors: re-export it")
    pooling = "the graph's own" if embedder.output == "sentence_embedding" else None
    prefixes = embedder.prefixes
    report.lines += [
        f"vectors: {raw.shape[1]} dimensions, pooling "
        f"{pooling or folder.pooling() or 'mean'}, up to {embedder.max_length} tokens",
        f"prompts: query {prefixes[True]!r}, passage {prefixes[False]!r}",
        f"a test encode: {took:.1f} ms a text; embedder id {embedder.model_id}",
    ]
    report.settings = {"embedder": {"provider": "onnx", "onnx": _location(folder)}}


def _cross_encoder(folder: ModelFolder, report: Report) -> None:
    from knowhub.providers.rerankers.onnx_cross import OnnxCrossEncoder

    reranker = OnnxCrossEncoder(OnnxCrossEncoderOptions(path=folder.root, file=_file(folder)))
    engine = reranker.load()
    reranker.score(_SAMPLE[0], _SAMPLE[1:])  # a first run sets ONNX Runtime up
    start = time.perf_counter()
    reranker.score(  # checks one finite score a pair
        _SAMPLE[0], [_SAMPLE[1], _SAMPLE[0]]
    )
    took = (time.perf_counter() - start) * 1000 / 2
    report.lines += [
        f"inputs: {', '.join(engine.inputs)}; output: {reranker.output}, one score a pair",
        f"a test score: {took:.1f} ms a pair, up to {reranker.max_length} tokens",
    ]
    report.settings = {
        "reranker": {"provider": "onnx-cross-encoder", "onnx_cross_encoder": _location(folder)}
    }


def _embedder_parity(folder: ModelFolder, report: Report) -> None:
    """The int8 graph's vectors against the float graph's, and the time of each."""
    from knowhub.providers.embedders.onnx_local import OnnxEmbedder

    exact, int8 = (
        OnnxEmbedder(OnnxEmbedderOptions(path=folder.root, file=_file(folder), quantize=how))
        for how in ("none", "int8")
    )
    (a, took_a), (b, took_b) = (_timed(e.embed_documents, _PARITY) for e in (exact, int8))
    cosines = np.sum(a * b, axis=1)  # both L2-normalised
    report.lines += [
        f"int8: {int8.load().quantised} matrices quantised; cosine with the float graph "
        f"mean {cosines.mean():.5f}, least {cosines.min():.5f} over {len(_PARITY)} texts",
        f"int8: {took_b:.1f} ms a text against {took_a:.1f} ms ({took_a / took_b:.2f}x); "
        f"embedder id {int8.model_id}",
    ]
    report.settings["embedder"]["onnx"]["quantize"] = "int8"


def _cross_parity(folder: ModelFolder, report: Report) -> None:
    """The int8 graph's scores against the float graph's, and the time of each."""
    from knowhub.providers.rerankers.onnx_cross import OnnxCrossEncoder

    exact, int8 = (
        OnnxCrossEncoder(
            OnnxCrossEncoderOptions(path=folder.root, file=_file(folder), quantize=how)
        )
        for how in ("none", "int8")
    )
    query, passages = _PARITY[0], _PARITY[1:]
    (a, took_a), (b, took_b) = (
        _timed(lambda texts, r=r: r.score(query, texts), passages) for r in (exact, int8)
    )
    scores, moved = np.asarray(a), np.abs(np.asarray(a) - np.asarray(b))
    order = np.sign(scores[:, None] - scores[None, :])
    alike = order == np.sign(np.asarray(b)[:, None] - np.asarray(b)[None, :])
    pairs = len(passages) * (len(passages) - 1)
    report.lines += [
        f"int8: {int8.load().quantised} matrices quantised; scores moved at most "
        f"{moved.max():.4f} (they span {np.ptp(scores):.4f}); "
        f"{(alike.sum() - len(passages)) // 2} of {pairs // 2} passage pairs in the float "
        "graph's order",
        f"int8: {took_b:.1f} ms a pair against {took_a:.1f} ms ({took_a / took_b:.2f}x)",
    ]
    report.settings["reranker"]["onnx_cross_encoder"]["quantize"] = "int8"


def _timed(run: Any, texts: list[str]) -> tuple[Any, float]:
    """``run(texts)`` after a first run that sets ONNX Runtime up, and its ms a text: the
    best of three runs (a dozen short texts take milliseconds, which anything else
    running would blur)."""
    run(texts[:1])
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = run(texts)
        best = min(best, (time.perf_counter() - start) * 1000 / len(texts))
    return result, best


def _file(folder: ModelFolder) -> str:
    return folder.graph.relative_to(folder.root).as_posix()


def _location(folder: ModelFolder) -> dict[str, Any]:
    where: dict[str, Any] = {"path": str(folder.root.resolve())}
    if _file(folder) not in ("model.onnx", "onnx/model.onnx"):
        where["file"] = _file(folder)
    return where
