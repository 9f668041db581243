"""A model folder as ``optimum-cli export onnx`` or sentence-transformers leave it.

Read once: which graph, the tokenizer, and what its configuration files say about
pooling, prompts and length. The folder's content hash (graph, external weights,
tokenizer and the files read here) goes into the embedder id, so a changed model is a
new collection version, never vectors of two models mixed in one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from knowhub.errors import ConfigError

__all__ = ["ModelFolder", "open_folder"]

# The configuration files read (relative paths), each optional.
CONFIGS = (
    "config.json",
    "modules.json",
    "tokenizer_config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
_GRAPH_PLACES = ("model.onnx", "onnx/model.onnx")
_POOLINGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "last",
    "pooling_mode_mean_tokens": "mean",
}
# Files beside a graph that are not its weights (another framework's, or text): any other
# file there may be external data, whatever its name (onnx.save(location=...)).
_NOT_WEIGHTS = (".onnx", ".safetensors", ".pt", ".pth", ".h5", ".msgpack", ".md", ".txt")


@dataclass(frozen=True)
class ModelFolder:
    """What a folder holds: its graph, tokenizer and parsed configuration files."""

    root: Path
    graph: Path
    tokenizer: Path
    configs: dict[str, Any] = field(default_factory=dict)

    def config(self, name: str) -> dict[str, Any]:
        """The parsed file ``name`` of :data:`CONFIGS` ({} when absent or not an object)."""
        value = self.configs.get(name)
        return value if isinstance(value, dict) else {}

    def modules(self) -> list[str]:
        """The kinds of sentence-transformers' modules (``Transformer``, ``Pooling``,
        ``Dense``, ``Normalize``…) in order, from modules.json ([] when absent)."""
        return [kind for kind, _ in self._modules()]

    def dense_configs(self) -> list[str]:
        """The config files of its Dense layers (``2_Dense/config.json``), in order."""
        return [f"{path}/config.json" for kind, path in self._modules() if kind == "Dense"]

    def _modules(self) -> list[tuple[str, str]]:
        raw = self.configs.get("modules.json")
        entries = [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
        return [
            (str(e.get("type", "")).rsplit(".", 1)[-1], str(e.get("path", ""))) for e in entries
        ]

    def dim(self) -> int | None:
        """The width its configuration declares for a sentence vector, if any: the last
        Dense layer's output, else a token's hidden state."""
        dense = [self.config(place).get("out_features") for place in self.dense_configs()]
        pooling = self.config("1_Pooling/config.json").get("word_embedding_dimension")
        hidden = self.config("config.json").get("hidden_size")
        for value in (*dense[-1:], pooling, hidden):
            if isinstance(value, int) and value > 0:
                return value
        return None

    def positions(self) -> int | None:
        """How many positions the model's table holds, if its config says."""
        value = self.config("config.json").get("max_position_embeddings")
        return value if isinstance(value, int) and value > 0 else None

    def max_length(self) -> int:
        """Tokens per text the model takes: sentence-transformers' setting, else the
        tokenizer's, else the position table's (at most 8,192), else 512."""
        st = self.config("sentence_bert_config.json").get("max_seq_length")
        tok = self.config("tokenizer_config.json").get("model_max_length")
        positions = self.config("config.json").get("max_position_embeddings")
        for value in (st, tok, positions):
            if isinstance(value, int) and 0 < value <= 8192:
                return value
        return 512

    @cached_property
    def digest(self) -> str:
        """sha256 of everything in the folder that makes the vectors: the graph, the files
        beside it that may be its external weights, the tokenizer and the configuration
        files read, by relative path."""
        paths = [self.graph, self.tokenizer, *_external(self.graph)]
        paths += [self.root / name for name in self.configs]
        digest = hashlib.sha256()
        for path in sorted(set(paths)):
            digest.update(path.relative_to(self.root).as_posix().encode() + b"\0")
            digest.update(_file_hash(path).encode())
        return digest.hexdigest()

    def length(self, asked: int) -> int:
        """Tokens per text: ``asked`` (0: :meth:`max_length`), never past the position
        table (an error naming the bound, not ONNX Runtime's index error mid-ingest)."""
        length = asked or self.max_length()
        positions = self.positions()
        if positions is not None and length > positions:
            raise ConfigError(
                f"max_length {length} is past the {positions} positions of {self.root}'s "
                f"model (config.json max_position_embeddings): set it to {positions} or less"
            )
        return length

    def pooling(self) -> str | None:
        """mean, cls or last from sentence-transformers' pooling file, if it says.

        Raises:
            ConfigError: it asks for a pooling knowhub does not do (max, weighted…).
        """
        pooling = self.config("1_Pooling/config.json")
        asked = [key for key, on in pooling.items() if key.startswith("pooling_mode") and on]
        other = [key for key in asked if key not in _POOLINGS]
        if other:
            raise ConfigError(
                f"{self.root}/1_Pooling/config.json asks for {', '.join(other)}: knowhub pools "
                "mean, CLS or last token; export the model with its pooling in the graph "
                "(optimum-cli export onnx --library sentence_transformers)"
            )
        return next((_POOLINGS[key] for key in asked), None)

    def prompts(self) -> dict[str, str]:
        """sentence-transformers' named prompts (``query``, ``passage``/``document``)."""
        raw = self.config("config_sentence_transformers.json").get("prompts")
        pairs = raw.items() if isinstance(raw, dict) else []
        return {k: v for k, v in pairs if isinstance(k, str) and isinstance(v, str)}


def open_folder(root: Path, file: str = "") -> ModelFolder:
    """Read the folder ``root``; ``file`` names its graph where it holds several.

    Raises:
        ConfigError: no such folder, no graph or several, no tokenizer.json, or a
            configuration file that is not JSON; each message says what to do.
    """
    root = Path(root).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(
            f"model folder {str(root)!r} not found: give the folder of an ONNX export"
        )
    graph = _graph(root, file)
    tokenizer = root / "tokenizer.json"
    if not tokenizer.is_file():
        raise ConfigError(
            f"{root} has no tokenizer.json: export the model with its tokenizer (optimum-cli "
            "export onnx writes it), or save it with AutoTokenizer.save_pretrained(folder)"
        )
    configs: dict[str, Any] = {}
    for name in CONFIGS:
        configs |= _json(root, name)
    folder = ModelFolder(root, graph, tokenizer, configs)
    for place in folder.dense_configs():  # a Dense layer's config holds its output width
        configs |= _json(root, place)
    return folder


def _json(root: Path, name: str) -> dict[str, Any]:
    """``{name: parsed}`` for the file ``name`` of ``root``, {} when there is none."""
    path = root / name
    if not path.is_file():
        return {}
    try:
        return {name: json.loads(path.read_text(encoding="utf-8"))}
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not JSON ({exc}): restore it from the export") from exc


def _graph(root: Path, file: str) -> Path:
    if file:
        path = (root / file).resolve()
        if not path.is_file() or not path.is_relative_to(root):
            raise ConfigError(
                f"{file} is no file inside {root}: set the file option to a .onnx file of it"
            )
        return path
    for place in _GRAPH_PLACES:
        if (root / place).is_file():
            return root / place
    found = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.onnx"))
    if len(found) == 1:
        return root / found[0]
    if not found:
        raise ConfigError(
            f"{root} holds no .onnx graph: export the model first (optimum-cli export onnx "
            "--model NAME FOLDER), see docs/embedders.md"
        )
    raise ConfigError(
        f"{root} holds several graphs ({', '.join(found)}): set the file option to one of them"
    )


def _external(graph: Path) -> list[Path]:
    """The files beside a graph that may hold its external data (``model.onnx_data``, or
    any name ``onnx.save`` was given): all but other graphs, other frameworks' weights and
    text; those of another graph named after it (``other.onnx_data``) left out."""
    graphs = [p.name for p in graph.parent.glob("*.onnx") if p != graph]
    return sorted(
        p
        for p in graph.parent.iterdir()
        if p.is_file()
        and p != graph
        and not p.name.endswith(_NOT_WEIGHTS)
        and not any(p.name.startswith(other) for other in graphs)
    )


def _file_hash(path: Path) -> str:
    """A file's sha256, kept per process while its size and mtime stay: a 1 GB graph
    takes ~1 s to hash, and an embedder is made by every App of a server."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        if key in _HASHES:
            return _HASHES[key]
    with path.open("rb") as handle:
        found = hashlib.file_digest(handle, "sha256").hexdigest()
    with _LOCK:
        _HASHES[key] = found
    return found


_HASHES: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()
