"""Text for a person's terminal: control characters shown, never obeyed.

File names, titles, document text and questions are written by whoever wrote them. Printed
raw, a name holding ``ESC [ 2 J`` clears the reader's screen, ``OSC 8`` makes a link that says
one thing and opens another, ``OSC 0`` retitles the window, CR and backspace overwrite what
was printed, and a right-to-left override shows ``evil\\u202etxt.md`` as ``evildm.txt``.
Every text the CLI prints (results, reports, progress, errors, its log lines) passes through
:func:`printable`, which writes each such character as Python writes it (``\\x1b``,
``\\r``, ``\\u202e``), as a name that is not UTF-8 is shown (``caf\\xe9.txt``). Tab and
newline are kept. ``--json`` output is exact, and obeys nothing either: :func:`json_text`
writes each such character as a JSON escape (``\\u009b``), which a JSON reader reads back
as the same character (JSON itself escapes only C0). click strips CSI sequences, and only
those, when stdout is not a terminal: not enough, and not on one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import click

__all__ = ["PrintableFormatter", "echo", "echo_json", "json_text", "printable"]

# C0 controls but tab and newline, DEL, C1 controls (8-bit CSI and OSC among them), and the
# bidirectional embeddings, overrides and isolates (the "Trojan Source" characters, as
# rustc's text_direction_codepoint lints them).
_SHOWN = [
    *(c for c in range(0x20) if chr(c) not in "\t\n"),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_ESCAPES = {c: repr(chr(c))[1:-1] for c in _SHOWN}  # as Python writes it: \r, \x1b, \u202e
# In JSON text the same, and the line and paragraph separators, which end a line in
# JavaScript source and in some log viewers (they only ever stand inside a JSON string).
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in (*_SHOWN, 0x2028, 0x2029)}


def printable(text: str) -> str:
    """``text`` with each character a terminal would obey written as its escape."""
    return text.translate(_ESCAPES)


def echo(text: str, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of :func:`printable` text (stdout, or stderr with ``err``)."""
    click.echo(printable(text), err=err, nl=nl)


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON that a terminal shows and a JSON reader reads back exactly: each
    character :func:`printable` would show, and U+2028/U+2029, as a ``\\uXXXX`` escape;
    every other character as it is (``ensure_ascii`` would escape every script)."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    return text.translate(_JSON_ESCAPES)


def echo_json(value: Any, indent: int | None = None) -> None:
    """:func:`json_text` of ``value`` on stdout."""
    click.echo(json_text(value, indent))


class PrintableFormatter(logging.Formatter):
    """Log lines for a terminal (or a file a terminal will show): :func:`printable`."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))
