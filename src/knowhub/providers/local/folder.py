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
from pathlib import Path
from typing import Any

from knowhub.errors import ConfigError

__all__ = ["ModelFolder", "content_hash", "open_folder"]

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
_CHUNK = 1 << 20


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
        raw = self.configs.get("modules.json")
        entries = raw if isinstance(raw, list) else []
        kinds = [str(e.get("type", "")) for e in entries if isinstance(e, dict)]
        return [kind.rsplit(".", 1)[-1] for kind in kinds]

    def dim(self) -> int | None:
        """The width its configuration declares for a token's hidden state, if any."""
        pooling = self.config("1_Pooling/config.json").get("word_embedding_dimension")
        hidden = self.config("config.json").get("hidden_size")
        for value in (pooling, hidden):
            if isinstance(value, int) and value > 0:
                return value
        return None

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

    def pooling(self) -> str | None:
        """mean, cls or last from sentence-transformers' pooling file, if it says."""
        pooling = self.config("1_Pooling/config.json")
        for key, mode in (
            ("pooling_mode_cls_token", "cls"),
            ("pooling_mode_lasttoken", "last"),
            ("pooling_mode_mean_tokens", "mean"),
        ):
            if pooling.get(key):
                return mode
        return None

    def prompts(self) -> dict[str, str]:
        """sentence-transformers' named prompts (``query``, ``passage``/``document``)."""
        raw = self.config("config_sentence_transformers.json").get("prompts") or {}
        return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}


def open_folder(root: Path, file: str = "") -> ModelFolder:
    """Read the folder ``root``; ``file`` names its graph where it holds several.

    Raises:
        ConfigError: no such folder, no graph or several, no tokenizer.json, or a
            configuration file that is not JSON; each message says what to do.
    """
    root = Path(root).expanduser()
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
    configs = {}
    for name in CONFIGS:
        path = root / name
        if path.is_file():
            try:
                configs[name] = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                raise ConfigError(
                    f"{path} is not JSON ({exc}): restore it from the export"
                ) from exc
    return ModelFolder(root, graph, tokenizer, configs)


def _graph(root: Path, file: str) -> Path:
    if file:
        path = root / file
        if not path.is_file():
            raise ConfigError(f"{path} not found: set the file option to a .onnx file of {root}")
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


def content_hash(folder: ModelFolder) -> str:
    """sha256 of everything in the folder that makes the vectors: the graph, its external
    weights, the tokenizer and the configuration files, by relative path."""
    paths = [folder.graph, folder.tokenizer, *_external(folder.graph)]
    paths += [folder.root / name for name in CONFIGS if (folder.root / name).is_file()]
    digest = hashlib.sha256()
    for path in sorted(set(paths)):
        digest.update(path.relative_to(folder.root).as_posix().encode() + b"\0")
        digest.update(_file_hash(path).encode())
    return digest.hexdigest()


def _external(graph: Path) -> list[Path]:
    """The external-data files exported beside a graph (``model.onnx_data``…)."""
    return sorted(p for p in graph.parent.glob(graph.name + "*") if p != graph and p.is_file())


def _file_hash(path: Path) -> str:
    """A file's sha256, kept per process while its size and mtime stay: a 1 GB graph
    takes ~1 s to hash, and an embedder is made by every App of a server."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _LOCK:
        if key in _HASHES:
            return _HASHES[key]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    with _LOCK:
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


_HASHES: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()
