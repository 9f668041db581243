"""A collection's derived search index at one version: segments, live rows, both legs.

Immutable once built: a write makes a new :class:`CollectionIndex` (new live masks, one
more segment), so a search running on the old one never sees half a change.

The lexical leg ranks as SQLite FTS5's ``bm25()`` does (k1 1.2, b 0.75, the same IDF with
its floor), over the same per-language terms, with corpus statistics over every live row
whatever the filters; filters restrict which rows are scored, inside both legs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from knowhub.models import Filters
from knowhub.providers.stores.derived.ann import Ann, best, gathered_scores
from knowhub.providers.stores.derived.postings import fts5_folded
from knowhub.providers.stores.derived.segment import Floats, Segment
from knowhub.providers.stores.indexed.index import filter_groups

__all__ = ["CollectionIndex"]

Mask = np.ndarray[Any, np.dtype[np.bool_]]

_K1 = 1.2
_B = 0.75
# FTS5 floors a term's IDF at this when it is in more than half the rows.
_MIN_IDF = 1e-6
# Filtered dense searches score the matching rows alone below this share of a segment
# (gathered a block at a time: 10 % of 100k rows in 2.8 ms, a full scan 14 ms); above it,
# scoring every row and masking is cheaper.
_GATHER_SHARE = 0.3
# Rows past the limit scored again after a batched scan (near-ties at the cut).
_RESCORED_MARGIN = 16


@dataclass(frozen=True)
class CollectionIndex:
    version: int
    dim: int
    segments: tuple[Segment, ...]
    live: tuple[Mask, ...]  # per segment: rows still in the collection
    ann: Ann | None = None  # over segments[0], when the collection is large

    @cached_property
    def rows(self) -> int:
        return sum(int(m.sum()) for m in self.live)

    @cached_property
    def _whole(self) -> tuple[bool, ...]:
        """Per segment: whether every row still lives (then no mask need be read)."""
        return tuple(bool(m.all()) for m in self.live)

    @cached_property
    def _avgdl(self) -> float:
        """BM25's mean row length, in terms, over the live rows."""
        terms = sum(int(s.lengths[m].sum()) for s, m in zip(self.segments, self.live, strict=True))
        return terms / max(self.rows, 1)

    @property
    def nbytes(self) -> int:
        ann = self.ann.nbytes if self.ann is not None else 0
        return sum(s.nbytes for s in self.segments) + ann

    def row_ids(self) -> set[int]:
        """Every live chunk row id (verify compares them with SQLite's)."""
        return {int(i) for s, m in zip(self.segments, self.live, strict=True) for i in s.ids[m]}

    # -- filters ---------------------------------------------------------------------

    def masks(self, filters: Filters) -> tuple[Mask, ...]:
        """Per segment, the live rows matching ``filters`` (every live row without any)."""
        if not filters:
            return self.live
        groups = filter_groups(filters)
        out = []
        for segment, live in zip(self.segments, self.live, strict=True):
            mask = live.copy()
            for group in groups:
                hit = np.zeros(len(segment), dtype=bool)
                for term in group:
                    hit[segment.filters.of(term)[0]] = True
                mask &= hit
            out.append(mask)
        return tuple(out)

    # -- lexical ---------------------------------------------------------------------

    def lexical(self, tokens: Sequence[str], limit: int, masks: Sequence[Mask]) -> list[Any]:
        """BM25 (FTS5's) of rows holding any token: (row id, score), best first."""
        if not tokens or self.rows == 0:
            return []
        tokens = [fts5_folded(t) for t in tokens]  # as FTS5 parses each quoted phrase
        found = [[s.lexical.of(t) for t in tokens] for s in self.segments]
        idf = [_idf(self.rows, self._df(found, i)) for i in range(len(tokens))]
        # k1·(1 − b + b·|D|/avgdl), split so that only the rows holding a term are touched.
        base, per_term = _K1 * (1 - _B), _K1 * _B / max(self._avgdl, 1e-9)
        results = []
        for at, (segment, postings, mask) in enumerate(
            zip(self.segments, found, masks, strict=True)
        ):
            unmasked = mask is self.live[at] and self._whole[at]
            rows, weights = [], []
            for weight, (where, counts) in zip(idf, postings, strict=True):
                if not unmasked:
                    keep = mask[where]
                    where, counts = where[keep], counts[keep]
                tf = counts.astype(np.float64)
                norm = base + per_term * segment.lengths[where]
                rows.append(where)
                weights.append(weight * tf * (_K1 + 1) / (tf + norm))
            results.append((segment, *_summed(rows, weights, len(segment), limit)))
        return _merge(results, limit)

    def _df(self, found: list[list[Any]], term: int) -> int:
        """Live rows holding the term, across segments."""
        return sum(
            len(found[s][term][0]) if self._whole[s] else int(live[found[s][term][0]].sum())
            for s, live in enumerate(self.live)
        )

    # -- dense -----------------------------------------------------------------------

    def dense(self, query: Floats, limit: int, masks: Sequence[Mask], ef_search: int) -> list[Any]:
        """Cosine similarity (exact; approximate over the big segment with an ANN
        index): (row id, similarity), best first."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        results: list[tuple[Segment, Any, Any]] = []
        for at, (segment, mask) in enumerate(zip(self.segments, masks, strict=True)):
            if at == 0 and self.ann is not None:
                positions, scores = self.ann.search(segment.vectors, q, limit, mask, ef_search)
            else:
                positions, scores = _exact(segment, q, limit, mask)
            results.append((segment, positions, scores))
        return _merge(results, limit)


def _idf(total: int, df: int) -> float:
    idf = math.log((total - df + 0.5) / (df + 0.5))
    return idf if idf > 0 else _MIN_IDF


def _summed(rows: list[Any], weights: list[Any], n: int, limit: int) -> tuple[Any, Any]:
    """The ``limit`` rows with the highest sums of their weights (every weight is > 0, so a
    row holding any token sums above 0)."""
    if not sum(len(r) for r in rows):
        return np.empty(0, np.int64), np.empty(0)
    scores = np.bincount(np.concatenate(rows), weights=np.concatenate(weights), minlength=n)
    positions = np.flatnonzero(scores > 0)
    return best(positions, scores[positions], limit)


def _exact(segment: Segment, q: Floats, limit: int, mask: Mask) -> tuple[Any, Any]:
    """Top ``limit`` positions of ``mask`` by dot product, and their scores."""
    n = len(segment)
    selected = int(mask.sum())
    if selected == 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    if selected <= _GATHER_SHARE * n:
        positions = np.flatnonzero(mask)
        return best(positions, gathered_scores(segment.vectors, positions, q), limit)
    scores = segment.batcher.scores(segment.vectors, q)
    positions = np.arange(n) if selected == n else np.flatnonzero(mask)
    # A product of several queries rounds differently from one's: the top rows are scored
    # again alone, so a result never depends on which queries came at the same time.
    top, _ = best(positions, scores[positions], limit + _RESCORED_MARGIN)
    return best(top, gathered_scores(segment.vectors, top, q), limit)


def _merge(results: Sequence[tuple[Segment, Any, Any]], limit: int) -> list[Any]:
    """The best ``limit`` of every segment's candidates: (row id, score), best first, ties
    to the lower row id (as a scan in row id order would)."""
    ids = np.concatenate([s.ids[p] for s, p, _ in results] or [np.empty(0, np.int64)])
    scores = np.concatenate([np.asarray(v, np.float64) for _, _, v in results] or [np.empty(0)])
    order = np.lexsort((ids, -scores))[:limit]
    return [(int(ids[i]), float(scores[i])) for i in order]
