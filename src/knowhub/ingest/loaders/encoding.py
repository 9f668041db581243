"""Turn a text file's bytes into ``str``, guessing the encoding when it is not UTF-8.

Order: byte-order marks, a declared charset (HTML ``<meta>``), strict UTF-8, then
the two legacy encodings our users meet most (GB18030 for Chinese, CP1251 for
Russian), and only then charset-normalizer's statistical guess. The two legacy
encodings overlap — Russian CP1251 bytes often decode as GB18030 and Chinese
GBK bytes always decode as CP1251 — so each result is kept only if it reads
like its language (see :func:`_looks_russian` and :func:`_looks_chinese`).
"""

from __future__ import annotations

import codecs
import itertools
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from knowhub.ingest.loaders.common import loader_error, too_much_text
from knowhub.surrogates import escape_surrogates

__all__ = ["Decoded", "declared_encoding", "decode_document", "decode_text", "normalize_newlines"]

# UTF-32 LE's BOM starts with UTF-16 LE's, so the longer marks are tried first.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_SNIFF_BYTES = 8192
# C0 controls other than tab, newline, form feed, carriage return and escape, plus DEL.
_CONTROL_BYTES = bytes([*range(0, 9), 11, *range(14, 27), *range(28, 32), 127])
_MAX_CONTROL_SHARE = 0.1
_STRIKING = re.compile(rb"(?<=[^\x00-\x1f])\x08")  # a backspace after a printable byte
_PLAUSIBILITY_CHARS = 65536  # enough prose to judge a language, cheap on big files
# Bytes decoded to judge a legacy encoding before the whole file is decoded in it: at
# most 4 bytes a character, so the sample holds at least _PLAUSIBILITY_CHARS of them.
_SAMPLE_BYTES = 4 * _PLAUSIBILITY_CHARS
_BLOCK_BYTES = 1 << 20  # decoding a file past the character limit: this much at a time
# Mislabelled declarations browsers silently widen (WHATWG Encoding Standard).
_DECLARED_ALIASES = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    # A page cannot declare UTF-16 in ASCII-compatible bytes; browsers read it as UTF-8.
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}
# A UTF-8 file is repaired (bad sequences replaced, with a warning) when it has at most
# this many bad sequences, or one per this many bytes if more: damage, not another
# encoding. Taken straight away when its valid multi-byte characters hold at least
# _REAL_UTF8_RATIO bytes per bad sequence, else only when no other encoding fits.
_FEW_BAD_SEQUENCES = 16
_BAD_SEQUENCE_SHARE = 1000
_REAL_UTF8_RATIO = 4
_SHOWN_OFFSETS = 10
_WORD = re.compile(r"[^\W\d_]+")
# Han ideographs plus CJK and full-width punctuation (not half-width katakana, which
# is what other legacy encodings often turn into when misread as GB18030).
_CHINESE_RUN = re.compile(
    r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff01-\uff60\uffe0-\uffe6]+"
)


class Decoded(NamedTuple):
    """A decoded text file: its text, and what was wrong with its bytes."""

    text: str
    warnings: tuple[str, ...] = ()


def decode_text(
    data: bytes, path: Path, declared: str | None = None, *, max_chars: int | None = None
) -> str:
    """The text of :func:`decode_document`, for callers with nowhere to put warnings."""
    return decode_document(data, path, declared, max_chars=max_chars).text


def decode_document(
    data: bytes,
    path: Path,
    declared: str | None = None,
    *,
    max_chars: int | None = None,
    overstruck: bool = False,
) -> Decoded:
    """Decode a text file and normalize its newlines to ``\\n``.

    A UTF-8 file with a few damaged bytes (a bad copy, a truncated character) is
    decoded with U+FFFD in their place and a warning that gives their byte offsets:
    one bad byte must not keep a whole document out of the index.

    Args:
        data: the file's bytes.
        path: the file, for error messages.
        declared: an encoding the file declares about itself (HTML ``<meta charset>``),
            tried after byte-order marks and ignored when unknown or wrong.
        max_chars: the most characters the text may have (``None``: no limit);
            decoding stops past it.
        overstruck: backspaces that strike over the character before them (bold and
            underline of a man page rendered for a terminal) are text, not a sign of a
            binary file; the caller removes them.

    Returns:
        The text, without a byte-order mark, and warnings starting with the path.

    Raises:
        LoaderError: the bytes look binary, no encoding fits them, or they decode to
            more than ``max_chars``.
    """
    decoder = _Decoder(data, path, max_chars)
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            # A BOM is a deliberate statement; a few bad bytes after it are damage,
            # not a reason to doubt the encoding.
            return _decode_marked(decoder, encoding)
    _reject_binary(data, path, overstruck)
    text = decoder.decode(declared_encoding(declared)) if declared else None
    if text is None:
        text = decoder.decode("utf-8")
    if text is not None:
        return Decoded(normalize_newlines(text))
    repaired = _repair_utf8(decoder)
    if repaired is not None and repaired.real_utf8:
        return repaired.decoded(path)
    text = _decode_legacy(decoder)
    if text is not None:
        return Decoded(normalize_newlines(text))
    if repaired is not None:  # no encoding fits, but few bytes are wrong in UTF-8
        return repaired.decoded(path)
    raise loader_error(
        path, "has an unknown text encoding: save it as UTF-8 or give it the right extension"
    )


def normalize_newlines(text: str) -> str:
    """Turn ``\\r\\n`` and lone ``\\r`` into ``\\n``."""
    if "\r" not in text:
        return text  # no copy of a large file that has nothing to change
    return text.replace("\r\n", "\n").replace("\r", "\n")


class _Decoder:
    """Decodes one file's bytes, never into more than ``max_chars`` characters."""

    def __init__(self, data: bytes, path: Path, max_chars: int | None) -> None:
        self.data, self.path, self.max_chars = data, path, max_chars

    def decode(self, encoding: str, errors: str = "strict") -> str | None:
        """The text in ``encoding``; ``None`` when the bytes do not fit it.

        Raises:
            LoaderError: the text has more than ``max_chars`` characters.
        """
        try:
            # No encoding takes less than a byte per character: short files cannot be over.
            if self.max_chars is None or len(self.data) <= self.max_chars:
                return self.data.decode(encoding, errors)
            return self._decode_bounded(encoding, errors, self.max_chars)
        except (UnicodeDecodeError, LookupError):
            return None

    def sample(self, encoding: str) -> str | None:
        """The first characters in ``encoding`` (a character cut by the sample's end is
        left out), to judge the encoding by; ``None`` when they do not fit it."""
        try:
            incremental = codecs.getincrementaldecoder(encoding)()
            return str(incremental.decode(self.data[:_SAMPLE_BYTES], final=False))
        except (UnicodeDecodeError, LookupError):
            return None

    def _decode_bounded(self, encoding: str, errors: str, limit: int) -> str:
        incremental = codecs.getincrementaldecoder(encoding)(errors)
        view = memoryview(self.data)
        pieces: list[str] = []
        count = 0
        for start in range(0, len(view), _BLOCK_BYTES):
            end = start + _BLOCK_BYTES
            piece = incremental.decode(view[start:end], final=end >= len(view))
            count += len(piece)
            if count > limit:
                raise too_much_text(self.path, limit)
            pieces.append(piece)
        return "".join(pieces)


def declared_encoding(declared: str) -> str:
    """The encoding to read a declared charset as (browsers widen some, see above)."""
    return _DECLARED_ALIASES.get(declared.lower(), declared)


def _decode_marked(decoder: _Decoder, encoding: str) -> Decoded:
    text = normalize_newlines(decoder.decode(encoding, errors="replace") or "")
    if "\ufffd" not in text:  # the usual case: no second decode to look for damage
        return Decoded(text)
    try:
        decoder.data.decode(encoding)
    except UnicodeDecodeError as exc:  # the first bad byte; the count is of U+FFFDs
        # utf-8-sig counts from after its BOM, the UTF-16/32 codecs from the file's start.
        offset = exc.start + (len(codecs.BOM_UTF8) if encoding == "utf-8-sig" else 0)
        name = encoding.removesuffix("-sig").upper()
        warning = _damage_warning(decoder.path, name, [offset], text.count("\ufffd"))
        return Decoded(text, (warning,))
    return Decoded(text)  # the file's own U+FFFD characters


@dataclass(frozen=True)
class _Repaired:
    """UTF-8 text with its few invalid byte sequences replaced by U+FFFD."""

    text: str
    offsets: list[int]  # where each invalid sequence starts, in bytes
    real_utf8: bool  # valid multi-byte characters outnumber the damage: UTF-8 for sure

    def decoded(self, path: Path) -> Decoded:
        warning = _damage_warning(path, "UTF-8", self.offsets[:_SHOWN_OFFSETS], len(self.offsets))
        return Decoded(normalize_newlines(self.text), (warning,))


def _repair_utf8(decoder: _Decoder) -> _Repaired | None:
    """The bytes as UTF-8 with bad sequences replaced, if they are few; else ``None``.

    One decode with an error handler that notes each bad sequence: decoding again after each
    one (or catching each ``UnicodeDecodeError``, which copies the rest of the input) took
    time quadratic in the file's size, and every CP1251/GBK file comes through here first.
    """
    data = decoder.data
    damage = _Damage(max(_FEW_BAD_SEQUENCES, len(data) // _BAD_SEQUENCE_SHARE))
    _repairing.damage = damage
    try:
        text = data.decode("utf-8", _REPAIR_HANDLER)
    except _TooDamagedError:
        return None
    finally:
        del _repairing.damage
    if decoder.max_chars is not None and len(text) > decoder.max_chars:
        raise too_much_text(decoder.path, decoder.max_chars)
    # Bytes beyond one per character: what the valid multi-byte characters took.
    offsets = damage.offsets
    multibyte = (len(data) - damage.bad_bytes) - (len(text) - len(offsets))
    return _Repaired(text, offsets, multibyte >= _REAL_UTF8_RATIO * len(offsets))


@dataclass
class _Damage:
    """The bad sequences one repair met, and how many it tolerates."""

    most: int
    offsets: list[int] = field(default_factory=list)
    bad_bytes: int = 0


class _TooDamagedError(Exception):
    """More bad sequences than a repair tolerates: the bytes are not damaged UTF-8."""


_repairing = threading.local()  # the running repair's _Damage (codec handlers are global)


def _note_damage(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    damage: _Damage = _repairing.damage
    damage.offsets.append(exc.start)
    damage.bad_bytes += exc.end - exc.start
    if len(damage.offsets) > damage.most:
        raise _TooDamagedError
    return "\ufffd", exc.end


_REPAIR_HANDLER = "knowhub-note-utf8-damage"
codecs.register_error(_REPAIR_HANDLER, _note_damage)


def _damage_warning(path: Path, encoding: str, offsets: list[int], count: int) -> str:
    shown = ", ".join(str(offset) for offset in offsets)
    more = f" (first {len(offsets)} shown)" if count > len(offsets) else ""
    where = "offset" if count == 1 else "offsets"
    return (
        f"{escape_surrogates(str(path))}: {count} invalid {encoding} byte sequence"
        f"{'s' if count != 1 else ''} at byte {where} {shown}{more} replaced with U+FFFD: "
        f"re-save the file as {encoding} to keep those characters"
    )


def _decode_legacy(decoder: _Decoder) -> str | None:
    # Judged on a sample, then decoded whole: one copy of the file's text, not two.
    chinese = decoder.sample("gb18030")
    cyrillic = decoder.sample("cp1251")
    russian = cyrillic is not None and _looks_russian(cyrillic[:_PLAUSIBILITY_CHARS])
    if chinese is not None and not russian and _looks_chinese(chinese[:_PLAUSIBILITY_CHARS]):
        text = decoder.decode("gb18030")
        if text is not None:
            return text
    if russian:
        text = decoder.decode("cp1251")
        if text is not None:
            return text
    return _guess(decoder)


def _reject_binary(data: bytes, path: Path, overstruck: bool) -> None:
    sample = data[:_SNIFF_BYTES]
    if overstruck and b"\x08" in sample:
        sample = _STRIKING.sub(b"", sample)
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if b"\x00" in sample or controls > _MAX_CONTROL_SHARE * len(sample):
        raise loader_error(
            path,
            "looks like a binary file, not text: remove it or give it the right extension",
        )


def _looks_russian(text: str) -> bool:
    """Whether ``text`` reads as Cyrillic prose rather than mis-decoded bytes.

    Chinese GBK bytes decoded as CP1251 are Cyrillic letters too, but in words
    that switch case mid-word (``ХвКЗТ``) or mix in Latin letters; real words
    almost never do.
    """
    words = [word for word in _WORD.findall(text) if _has_cyrillic(word)]
    if not words:
        return False
    odd = sum(1 for word in words if _is_odd_word(word))
    return odd <= 0.1 * len(words)


def _has_cyrillic(word: str) -> bool:
    return any("\u0400" <= char <= "\u04ff" for char in word)


def _is_odd_word(word: str) -> bool:
    if any(char.isascii() for char in word):
        return True
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(word))


def _looks_chinese(text: str) -> bool:
    """Whether ``text`` reads as Chinese rather than mis-decoded bytes.

    Western CP1252 text can decode as GB18030 too, but then each accented letter
    pair becomes one isolated Han character inside a Latin word; Chinese prose
    has runs of Han characters and punctuation.
    """
    runs = _CHINESE_RUN.findall(text)
    chinese = sum(len(run) for run in runs)
    other = sum(1 for char in text if not char.isascii()) - chinese
    return bool(runs) and chinese >= 2 * other and chinese >= 1.5 * len(runs)


def _guess(decoder: _Decoder) -> str | None:
    from charset_normalizer import from_bytes

    best = from_bytes(decoder.data).best()
    return decoder.decode(best.encoding) if best is not None else None
