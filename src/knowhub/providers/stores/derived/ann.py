"""An approximate nearest-neighbour index (faiss HNSW) over a big segment's vectors.

An exact scan reads every vector: 15 ms per query at 100k chunks of 384 floats on one
core, already at memory bandwidth. The HNSW graph walks a few thousand of them instead.
Its vectors are 8-bit scalar-quantised (a quarter of the memory); the candidates it finds
are scored again exactly from the float32 vectors, so scores are the exact scan's and only
recall can differ (measured in ``make bench-scale``). Filters reach the graph as a bitmap
of allowed positions, so they act inside the walk; a filter matching few rows is answered
by scoring those rows exactly instead, which is cheaper and exact.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from knowhub.providers.stores.derived.segment import Floats

__all__ = ["Ann", "best", "gathered_scores"]

# Graph degree and build effort. On 30k hashing-embedder vectors of scifact text (a hard
# case: a query's nearest chunk is at cosine 0.37) recall@10 at efSearch 256 was 0.92 with
# M 16 / efConstruction 64, 0.96 with M 32 / 64, 0.988 with M 32 / 128 (build time 2.2x).
_M = 32
_EF_CONSTRUCTION = 128
# Vectors the quantiser's ranges are learnt from (all of them would cost time for nothing).
_TRAIN_ROWS = 65536
# Below this many allowed rows a filtered search scores them exactly (10k rows: ~5 ms,
# recall 1; the walk at 10 % of 100k: 0.92 at efSearch 256, 0.985 at 1024 for ~10 ms).
_EXACT_BELOW = 20000
# An exact score of the allowed rows costs ~0.28 µs a row, a walk ~12.5 µs per efSearch
# (1M chunks): below this many rows per efSearch the allowed rows are scored exactly (a
# tenth of 1M: 100k rows in ~30 ms, where the walk at efSearch 6,400 took 80).
_ROWS_PER_EF = 40
# Rows gathered at a time for an exact score of some rows (1.5 MB of 384-d vectors).
_GATHER_BLOCK = 1024
# A filtered walk's efSearch grows by the inverse of the share allowed, up to this factor.
_FILTER_EF_GROWTH = 4.0
# Of a walk's candidates (best first by their 8-bit score), this many times the limit, and
# at least _RESCORED_MIN, are scored exactly: the quantised order errs only among near ties.
_RESCORED = 4
_RESCORED_MIN = 64


class Ann:
    """A faiss ``IndexHNSWSQ`` whose ids are the positions of a segment's rows."""

    def __init__(self, index: Any) -> None:
        self._index = index

    @staticmethod
    def build(vectors: Floats) -> Ann:
        faiss = _faiss()
        n, dim = vectors.shape
        index = faiss.IndexHNSWSQ(
            dim, faiss.ScalarQuantizer.QT_8bit, _M, faiss.METRIC_INNER_PRODUCT
        )
        index.hnsw.efConstruction = _EF_CONSTRUCTION
        step = max(1, n // _TRAIN_ROWS)
        index.train(np.ascontiguousarray(vectors[::step]))
        for start in range(0, n, 65536):  # batches: a mapped file is read in pieces
            index.add(np.ascontiguousarray(vectors[start : start + 65536]))
        return Ann(index)

    @staticmethod
    def load(path: Path) -> Ann:
        return Ann(_faiss().read_index(str(path)))

    def save(self, path: Path) -> None:
        _faiss().write_index(self._index, str(path))

    @property
    def nbytes(self) -> int:
        # Codes (one byte a dimension) and level-0 links (2·M int32 a row) dominate.
        return int(self._index.ntotal) * (int(self._index.d) + 8 * _M)

    def search(
        self, vectors: Floats, q: Floats, limit: int, mask: np.ndarray[Any, Any], ef_search: int
    ) -> tuple[Any, Any]:
        """The best ``limit`` allowed positions and their exact scores (unordered), from
        ``ef_search`` candidates walked at least."""
        allowed = int(mask.sum())
        if allowed == 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        # A walk through a filter reaches fewer allowed rows per step: walk further.
        ef_search = int(ef_search * min(_FILTER_EF_GROWTH, len(mask) / allowed))
        if allowed < min(max(_EXACT_BELOW, _ROWS_PER_EF * ef_search), len(mask)):
            positions = np.flatnonzero(mask)
            return best(positions, gathered_scores(vectors, positions, q), limit)
        faiss = _faiss()
        want = min(max(ef_search, 2 * limit), allowed)
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(ef_search, want)
        if allowed < len(mask):
            # The selector points into ``bits``: the local keeps it alive through the search.
            bits = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
        _, found = self._index.search(q.reshape(1, -1), want, params=params)
        # Best first by the quantised score: only the head is scored again exactly (1,536
        # rows' floats took 5 ms of CPU, and BLAS's threads spun another 20 on the other core).
        candidates = found[0][found[0] >= 0][: max(_RESCORED * limit, _RESCORED_MIN)]
        ordered = np.sort(candidates)  # in file order: fewer pages touched, in sequence
        return best(ordered, gathered_scores(vectors, ordered, q), limit)


def _faiss() -> Any:
    """faiss, imported on first use (~0.2 s: only collections big enough need it); typed as
    Any since its bundled stubs lack parts of the SWIG API (SearchParametersHNSW)."""
    return importlib.import_module("faiss")


def gathered_scores(vectors: Floats, positions: Any, q: Floats) -> Any:
    """``vectors[positions] @ q``, gathered a block at a time: the block stays in cache
    instead of going to memory and back (10k of 100k rows: 2.8 ms, against 5.2 at once)."""
    out = np.empty(len(positions), dtype=np.float32)
    for start in range(0, len(positions), _GATHER_BLOCK):
        part = positions[start : start + _GATHER_BLOCK]
        out[start : start + len(part)] = vectors[part] @ q
    return out


def best(positions: Any, scores: Any, limit: int) -> tuple[Any, Any]:
    """The ``limit`` best (position, score) pairs, unordered."""
    if len(scores) > limit:
        keep = np.argpartition(-scores, limit - 1)[:limit]
        return positions[keep], scores[keep]
    return positions, scores
