"""Term → rows lists in compressed-sparse-row arrays, looked up without a Python dict.

The lexical index (term → rows holding it, with term frequencies) and the filter columns
(``key=value`` → rows) share this shape. Terms are found through a sorted array of 64-bit
hashes and confirmed against the term text, so a snapshot opens by mapping a few arrays
instead of rebuilding a dictionary of hundreds of thousands of strings (~200 ms at 100k
chunks), and a query pays one binary search per term.
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Postings", "build_postings", "fts5_folded", "term_hash"]

Ints = np.ndarray[Any, np.dtype[np.int64]]
Int32s = np.ndarray[Any, np.dtype[np.int32]]


# Combining diacritical marks, which FTS5's unicode61 drops from a token.
_MARKS = range(0x300, 0x370)


@functools.lru_cache(maxsize=1 << 16)
def fts5_folded(term: str) -> str:
    """``term`` as FTS5's default tokenizer (unicode61, remove_diacritics 1) stores it: a
    letter of one diacritic on an ASCII base loses it (é → e, but ǘ, two, and ǣ, on æ, keep
    theirs), long s is s, lone marks go. Terms are lower-cased already; checked against
    SQLite over the Latin and Cyrillic letters (tests/unit/test_fts5_folding.py)."""
    if term.isascii():
        return term
    out = []
    for char in term:
        if ord(char) in _MARKS:
            continue
        if char in "ſẛ":
            out.append("s")
            continue
        parts = unicodedata.normalize("NFD", char)
        single = len(parts) == 2 and unicodedata.combining(parts[1]) and parts[0].isascii()
        out.append(parts[0] if single else char)
    return "".join(out)


def term_hash(term: str) -> int:
    """A stable 64-bit hash (Python's own ``hash`` changes with every process)."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little") >> 1


@dataclass(frozen=True)
class Postings:
    """Rows per term: ``rows[offsets[i]:offsets[i + 1]]`` are those of term ``i``, ascending,
    with ``counts`` (term frequency) beside them; terms are ordered by ``hashes``."""

    hashes: Ints  # sorted
    text: np.ndarray[Any, np.dtype[np.uint8]]  # UTF-8 of every term, in term order
    text_offsets: Ints
    offsets: Ints
    rows: Int32s
    counts: np.ndarray[Any, np.dtype[np.uint16]]

    def find(self, term: str) -> int | None:
        """The term's index, or None."""
        h = term_hash(term)
        at = int(np.searchsorted(self.hashes, h))
        encoded = term.encode()
        while at < len(self.hashes) and int(self.hashes[at]) == h:
            start, end = int(self.text_offsets[at]), int(self.text_offsets[at + 1])
            if self.text[start:end].tobytes() == encoded:
                return at
            at += 1
        return None

    def of(self, term: str) -> tuple[Int32s, np.ndarray[Any, np.dtype[np.uint16]]]:
        """The rows holding ``term`` and how often each holds it (empty when none does)."""
        at = self.find(term)
        if at is None:
            return self.rows[:0], self.counts[:0]
        start, end = int(self.offsets[at]), int(self.offsets[at + 1])
        return self.rows[start:end], self.counts[start:end]

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        return {
            "hashes": self.hashes,
            "text": self.text,
            "text_offsets": self.text_offsets,
            "offsets": self.offsets,
            "rows": self.rows,
            "counts": self.counts,
        }


def build_postings(per_row: Iterable[Sequence[str]]) -> Postings:
    """Postings of the terms of each row (row ``i`` holds ``per_row[i]``, repeats counted)."""
    vocab: dict[str, int] = {}
    # Machine integers, not a list: a million chunks hold ~60 million terms.
    ids = array("q")
    lengths = array("q")
    for terms in per_row:
        # setdefault's len(vocab) is read before it inserts: a new term gets the next id.
        ids.extend([vocab.setdefault(t, len(vocab)) for t in terms])
        lengths.append(len(terms))
    row_of = np.repeat(np.arange(len(lengths), dtype=np.int64), np.frombuffer(lengths, np.int64))
    # One key per (term, row): sorted, they group by term, rows ascending within a term.
    keys, counts = np.unique(np.frombuffer(ids, np.int64) << 32 | row_of, return_counts=True)
    term_of = keys >> 32
    terms = list(vocab)
    hashes = np.fromiter((term_hash(t) for t in terms), dtype=np.int64, count=len(terms))
    order = np.argsort(hashes, kind="stable")  # new position → vocabulary id
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    # Regroup the (term, row) pairs by the terms' hash order.
    regroup = np.argsort(rank[term_of], kind="stable")
    per_term = np.bincount(rank[term_of], minlength=len(terms))
    encoded = [terms[i].encode() for i in order]
    return Postings(
        hashes=hashes[order],
        text=np.frombuffer(b"".join(encoded), dtype=np.uint8),
        text_offsets=_offsets(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))),
        offsets=_offsets(per_term.astype(np.int64)),
        rows=(keys[regroup] & 0xFFFFFFFF).astype(np.int32),
        counts=np.minimum(counts[regroup], 65535).astype(np.uint16),
    )


def _offsets(sizes: Ints) -> Ints:
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out
