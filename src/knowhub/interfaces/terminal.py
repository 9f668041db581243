"""Text for a person's terminal: control characters shown, never obeyed.

File names, titles, document text and questions are written by whoever wrote them. Printed
raw, a name holding ``ESC [ 2 J`` clears the reader's screen, ``OSC 8`` makes a link that says
one thing and opens another, ``OSC 0`` retitles the window, CR and backspace overwrite what
was printed, and a right-to-left override shows ``evil\\u202etxt.md`` as ``evildm.txt``.
Every text the CLI prints (results, reports, progress, errors, its log lines) passes through
:func:`printable`, which writes each such character as Python writes it (``\\x1b``,
``\\r``, ``\\u202e``), as a name that is not UTF-8 is shown (``caf\\xe9.txt``). Tab and
newline are kept. ``--json`` output is exact (JSON escapes what it must). click strips CSI
sequences, and only those, when stdout is not a terminal: not enough, and not on one.
"""

from __future__ import annotations

import logging

import click

__all__ = ["PrintableFormatter", "echo", "printable"]

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


def printable(text: str) -> str:
    """``text`` with each character a terminal would obey written as its escape."""
    return text.translate(_ESCAPES)


def echo(text: str, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of :func:`printable` text (stdout, or stderr with ``err``)."""
    click.echo(printable(text), err=err, nl=nl)


class PrintableFormatter(logging.Formatter):
    """Log lines for a terminal (or a file a terminal will show): :func:`printable`."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))
