"""Strings that UTF-8 cannot encode: file names with undecodable bytes, lone surrogates.

On POSIX, Python decodes a file name's bytes with ``surrogateescape``: a byte that is
not UTF-8 (``b"caf\\xe9.txt"``) becomes a lone surrogate (``"caf\\udce9.txt"``). Such a
string opens the file, but SQLite, JSON files, OTLP and terminals refuse it. Names are
therefore stored and shown escaped, the way ``bytes.decode(errors="backslashreplace")``
writes them (``"caf\\\\xe9.txt"``), and :func:`restore_surrogates` turns a stored name
back into the one that opens the file. Document *text* instead gets U+FFFD for each
surrogate (:func:`replace_surrogates`), which keeps every character offset.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "escape_surrogates",
    "escape_surrogates_deep",
    "replace_surrogates",
    "restore_surrogates",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
# surrogateescape maps only the bytes 0x80-0xff, to U+DC80-U+DCFF.
_ESCAPED_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as ASCII: ``\\xe9`` for an undecodable
    file-name byte, ``\\ud800`` for any other; unchanged (the same object) without any."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape_one, text)


def _escape_one(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def restore_surrogates(stored: str) -> str:
    """The name :func:`escape_surrogates` made ``stored`` from, for opening the file.

    A name whose restored bytes would be valid UTF-8 was never escaped (its bytes would
    have decoded), so it is returned as it is: only a literal ``\\xNN`` in a real file
    name that also restores to invalid UTF-8 is misread, a trade-off for keeping every
    ordinary name unchanged.
    """
    if "\\x" not in stored:
        return stored
    restored = _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m[1], 16)), stored)
    try:
        restored.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeDecodeError:
        return restored
    return stored


def escape_surrogates_deep(value: Any) -> Any:
    """``value`` with :func:`escape_surrogates` applied to every string inside it
    (dict keys and values, list and tuple items); other values are returned as they are."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {escape_surrogates_deep(k): escape_surrogates_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_surrogates_deep(v) for v in value]
    if isinstance(value, tuple):
        return tuple(escape_surrogates_deep(v) for v in value)
    return value


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (same length, same offsets)."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)
