"""Sentences of a passage, for any mix of English, Chinese and Russian: what answers are
checked against (knowhub.answer) and what a passage is scored by across languages
(knowhub.query.crosslingual)."""

from __future__ import annotations

import re
import unicodedata
from itertools import pairwise

__all__ = ["sentences"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")
_MARKUP = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|>\s*)")
_TABLE_RULE = re.compile(r"^\|[\s:|-]+\|$")
_CLOSED = tuple(".!?:;。！？：；")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_FULL = 0.8  # a line this wide a share of its block's widest is full: the text wrapped there
_FULL_COLUMNS = 40  # a shorter line is never full (a Han character takes two columns)
# Abbreviations a period does not end a sentence after ("до MAXNS (в настоящее время 3, см.
# <resolv.h>) серверов"), compared lower-cased with their period.
_ABBREVIATIONS = frozenset(
    (
        *("e.g.", "i.e.", "cf.", "vs.", "approx.", "fig."),
        *("см.", "т.е.", "напр.", "рис.", "стр.", "гл."),
    )
)


def sentences(text: str) -> list[str]:
    """Sentences of ``text``: prose split at sentence ends, table rows as "column: value".

    Lines of a paragraph wrapped at a fixed width are joined; other lines — slide
    bullets, list items — stand alone. Markdown headings and list markers are dropped.
    """
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if lines and all(line.startswith("|") for line in lines):
            out.extend(_table_rows(lines))
            continue
        lines = [line for line in lines if not line.startswith("#")]  # in the section path
        # A paragraph wrapped at a fixed width has some line continuing in lower case; then
        # every line break in it is a wrap. Otherwise (slide bullets) each line stands alone.
        wrapped = any(
            nxt[:1].islower() and not cur.endswith(_CLOSED) for cur, nxt in pairwise(lines)
        )
        merged: list[str] = []
        for i, raw in enumerate(lines):
            line = _MARKUP.sub("", raw)
            # A list item (marker removed) never continues the line before.
            joins = bool(merged) and line == raw and not merged[-1].endswith(_CLOSED)
            if joins and (wrapped or _wrapped_han(lines, i)):
                merged[-1] += _glue(merged[-1], line) + line
            elif line:
                merged.append(line)
        for piece in merged:
            out.extend(_joined([s.strip() for s in _SENTENCE_END.split(piece) if s.strip()]))
    return out


def _wrapped_han(lines: list[str], i: int) -> bool:
    """Whether line ``i`` continues the one before in Chinese text wrapped at a fixed width
    (a PDF page's lines: "…并且在机器的 /etc/ssh/sshd_config" / "文件中添加行。"), where no
    lower case tells a wrap: it starts with a Han character and the line before fills the
    width the block's other lines show (:data:`_FULL` of the widest of them, in columns: a
    man page's option line "--vacuum-size=, --vacuum-time=" is as wide as twenty-odd Han
    characters); short lines are a list's or a slide's, and a heading is narrower than the
    text below it."""
    before = _columns(lines[i - 1])
    width = max((_columns(line) for j, line in enumerate(lines) if j != i - 1), default=0)
    return bool(_HAN.match(lines[i])) and before >= max(_FULL * width, _FULL_COLUMNS)


def _columns(line: str) -> int:
    """How many columns ``line`` takes on a terminal or a page: two for a wide character."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def _glue(before: str, line: str) -> str:
    """What joins a wrapped line to the one before: nothing between Han characters (Chinese
    has no spaces), else a space."""
    return "" if _HAN.match(line) and _HAN.match(before[-1:]) else " "


def _joined(parts: list[str]) -> list[str]:
    """``parts`` with those after an abbreviation put back onto the one before ("e.g. the …",
    "см. <resolv.h>) серверов"). A part in lower case still starts a sentence: it is often a
    command ("atrm deletes jobs.")."""
    out: list[str] = []
    for part in parts:
        last = out[-1].rsplit(None, 1)[-1].lower() if out else ""
        if out and last in _ABBREVIATIONS:
            out[-1] += " " + part
        else:
            out.append(part)
    return out


def _table_rows(lines: list[str]) -> list[str]:
    """A Markdown table's rows as "column: value; …" (the header names each value)."""
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in lines
        if not _TABLE_RULE.match(line)
    ]
    if len(rows) < 2:
        return [" ".join(r) for r in rows]
    header = rows[0]
    return [
        "; ".join(f"{h}: {v}" for h, v in zip(header, row, strict=False) if v) for row in rows[1:]
    ]
