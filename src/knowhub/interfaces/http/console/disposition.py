"""Reading a multipart part's ``Content-Disposition`` as browsers write it.

Browsers send a file's name as UTF-8 inside ``filename="…"`` (the HTML standard's form
encoding: ``"`` as ``%22``, line breaks as ``%0A``/``%0D``, nothing else escaped); some
clients add ``filename*=UTF-8''…`` (RFC 8187's percent-encoded form), which wins when it
decodes. python-multipart's ``parse_options_header`` encodes whatever it was given as Latin-1,
so a Chinese, Cyrillic or emoji name raised UnicodeEncodeError there (a 500), and a UTF-8 name
decoded byte by byte became mojibake; hence this parser. The name it returns is as the
client meant it; :func:`~knowhub.interfaces.http.console.uploads.safe_name` makes it safe.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

__all__ = ["Disposition", "parse_disposition"]

# RFC 8187 requires UTF-8 and allows ISO-8859-1; anything else is ignored (the plain
# filename is used), never looked up as a codec (Python's include rot13, zlib, …).
# Keyed by codecs.lookup()'s names, which normalise every alias ("latin-1", "ISO-8859-1").
_CHARSETS = {"utf-8": "utf-8", "iso8859-1": "latin-1", "ascii": "ascii"}
_PERCENT = re.compile(rb"%(?![0-9A-Fa-f]{2})")  # a % not followed by two hex digits
# A quoted string's content: possessive, so it never backtracks (linear in its length).
_QUOTED = re.compile(r'(?:[^"\\]++|\\.)*+', re.DOTALL)


@dataclass(frozen=True)
class Disposition:
    """A part's field name, and its file name (None for a form field)."""

    name: str
    filename: str | None


def parse_disposition(raw: bytes) -> Disposition:
    """``form-data; name="files"; filename="报销制度.md"`` (the header's value, as sent).

    The bytes are read as UTF-8, or as Latin-1 when they are not UTF-8 (old clients).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    params = _params(text.partition(";")[2])
    filename = params.get("filename")
    extended = params.get("filename*")
    if extended is not None:
        filename = _extended(extended) or filename or extended.split("'", 2)[-1]
    return Disposition(params.get("name", ""), filename)


def _params(text: str) -> dict[str, str]:
    """``key=value`` pairs, keys lower-cased; the first of a repeated key counts.

    One pass over the text (a part without ``=`` is skipped): a pattern that found the pairs
    backtracked cubically on such a part, and the multipart parser runs on the event loop.
    """
    found: dict[str, str] = {}
    at, end = 0, len(text)
    while at < end:
        semicolon = _find(text, ";", at)
        equals = text.find("=", at, semicolon)
        if equals < 0:
            at = semicolon + 1
            continue
        key = text[at:equals].strip().lower()
        start = equals + 1
        while start < semicolon and text[start].isspace():
            start += 1
        if start < end and text[start] == '"':
            value, after = _quoted(text, start)
            semicolon = _find(text, ";", after)
        else:
            value = text[start:semicolon].strip()
        if key:
            found.setdefault(key, value)
        at = semicolon + 1
    return found


def _find(text: str, char: str, start: int) -> int:
    """Where ``char`` is next from ``start``, or the end of ``text``."""
    at = text.find(char, start)
    return len(text) if at < 0 else at


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The quoted string at ``text[start]`` (a ``"``), unquoted, and where it ends.

    A ``\\`` keeps the next character inside the string, but only ``\\"`` and ``\\\\``
    are escapes: a browser sends a Windows path's ``\\`` as it is. An unterminated string
    runs to the end of the text.
    """
    match = _QUOTED.match(text, start + 1)
    assert match is not None  # the pattern matches the empty string
    value = match.group().replace('\\"', '"').replace("\\\\", "\\")
    return value, min(match.end() + 1, len(text))


def _extended(value: str) -> str | None:
    """RFC 8187's ``charset'language'percent-encoded``, or None if it does not decode."""
    charset, quote, rest = value.partition("'")
    _language, quote2, encoded = rest.partition("'")
    if not (quote and quote2):
        return None
    try:
        codec = _CHARSETS.get(codecs.lookup(charset.strip()).name)
    except LookupError:
        return None
    if codec is None or not encoded.isascii() or _PERCENT.search(encoded.encode()):
        return None
    try:
        return unquote_to_bytes(encoded).decode(codec)
    except UnicodeDecodeError:
        return None
