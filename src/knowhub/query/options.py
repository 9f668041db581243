"""Questions that name a command-line option: the entry that defines it comes first.

A question like ``grep -c`` or ``tar -x`` names an option exactly, and a manual has one
passage defining it: the entry headed ``-c, --count`` (man pages saved as text get a heading
per option entry, :mod:`knowhub.ingest.loaders.manpage`; Markdown references have them too).
Neither leg finds that passage reliably: ``-c`` is one letter to the lexical index, matched
as often in ``SYNOPSIS`` and examples, and an embedding does not tell ``-c`` from ``-C``.
Among tar, ls and grep pages (benchmarks/man_pages.py, docs/benchmarks.md) the defining entry
ranked first for 12 of 23 option questions and outside the top 10 for 4. The heading is
exact evidence, so hits whose own heading defines an option the question names, on a page
the question names too, are put first in their fused order; the others follow in theirs
(22 of 23 first).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["asked", "defined", "defining_first"]

# What typesetting and autocorrection make of dashes: groff's hyphen and minus, and the en
# and em dashes an editor puts for "--" ("—list").
_DASHES = str.maketrans(
    {"\u2010": "-", "\u2011": "-", "\u2212": "-", "\u2013": "--", "\u2014": "--"}
)
# A dash or two, then a letter, digit or one of ? @ # (``-?``, ``-#``), not inside a word
# ("e-mail", "x-ray" name nothing); "--max-count=5" names "--max-count".
_ASKED = re.compile(r"(?<![\w-])(--?[\w?@#][\w-]*)")
# An option at the start of a heading or after a comma, ending where its argument starts:
# ``-m NUM, --max-count=NUM``, ``-k, --keys k,k,...``, ``--tag,``.
_DEFINED = re.compile(r"(?:^|,\s*)(--?[\w?@#][\w-]*)(?=$|[\s,=\[])")
_WORD = re.compile(r"[\w.+:@/-]+")


def asked(query: str) -> frozenset[str]:
    """The options ``query`` names, as written (``-x`` and ``-X`` differ)."""
    return frozenset(_ASKED.findall(query.translate(_DASHES)))


def defined(section_path: str) -> frozenset[str]:
    """The options a section's own heading defines: ``-m NUM, --max-count=NUM`` defines
    ``-m`` and ``--max-count``; a heading that does not start with one defines none."""
    heading = section_path.rsplit(" > ", 1)[-1].replace("`", "").translate(_DASHES).strip()
    tags = [tag for tag in _DEFINED.findall(heading) if not _number(tag)]
    return frozenset(tags) if tags and heading.startswith(tags[0]) else frozenset()


def defining_first(
    fused: Sequence[tuple[int, float]], paths: Mapping[int, str], query: str
) -> tuple[list[tuple[int, float]], int]:
    """``fused`` with the hits whose heading defines an option ``query`` names, under a top
    heading ``query`` names (``tar -C``: tar's ``-C``, not ls's), first in fused order; and
    how many those are. Without the page named nothing moves: ``git commit -m`` must not
    bring up ls's ``-m``. Their scores are raised to at least the best of the rest, so
    scores still fall down the list."""
    options, words = asked(query), set(_WORD.findall(query.lower()))
    first = [
        (item, score)
        for item, score in fused
        if defined(paths.get(item, "")) & options and _named(paths[item], words)
    ]
    if not first:
        return list(fused), 0
    moved = {item for item, _ in first}
    rest = [(item, score) for item, score in fused if item not in moved]
    floor = rest[0][1] if rest else 0.0
    return [(item, max(score, floor)) for item, score in first] + rest, len(first)


def _named(path: str, words: set[str]) -> bool:
    """Whether ``words`` hold every word of the path's top heading, for a man page its
    command (``tar(1)``: ``tar``; ``gcloud compute ssh(1)``: all three)."""
    top = set(_WORD.findall(path.split(" > ", 1)[0].split("(", 1)[0].lower()))
    return bool(top) and top <= words


def _number(tag: str) -> bool:
    """``-20`` in "-20 °C storage" is a number, not an option (``-1`` may be one)."""
    digits = tag.lstrip("-")
    return digits.isdigit() and len(digits) > 1
