"""Questions that name a command-line option: the entry that defines it comes first.

A question like ``grep -c`` or ``tar -x`` names an option exactly, and a manual has one
passage defining it: the entry headed ``-c, --count`` (man pages saved as text get a heading
per option entry, :mod:`knowhub.ingest.loaders.manpage`; Markdown references have them too).
Neither leg finds that passage reliably: ``-c`` is one letter to the lexical index, matched
as often in ``SYNOPSIS`` and examples, and an embedding does not tell ``-c`` from ``-C``.
Among tar, ls and grep pages (benchmarks/man_pages.py, docs/benchmarks.md) the defining entry
ranked first for 12 of 23 option questions and outside the top 10 for 4. The heading is
exact evidence, so hits whose own heading defines an option the question names are put first,
in their fused order; the others follow in theirs (22 of 23 first).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

__all__ = ["asked", "defined", "defining_first"]

# A dash or two and a letter or digit, not inside a word ("e-mail", "x-ray" name nothing);
# "--max-count=5" names "--max-count".
_ASKED = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)")
_TAG = re.compile(r"--?[A-Za-z0-9][\w-]*")
_WORD = re.compile(r"[\w.-]+")


def asked(query: str) -> frozenset[str]:
    """The options ``query`` names, as written (``-x`` and ``-X`` differ)."""
    return frozenset(_ASKED.findall(query))


def defined(section_path: str) -> frozenset[str]:
    """The options a section's own heading defines: ``-m NUM, --max-count=NUM`` defines
    ``-m`` and ``--max-count``; a heading that is not a list of options defines none."""
    heading = section_path.rsplit(" > ", 1)[-1].replace("`", "")
    tags = []
    for part in heading.split(","):
        found = _TAG.match(part.strip())
        if found is None:
            return frozenset()
        tags.append(found.group())
    return frozenset(tags)


def defining_first(
    fused: Sequence[tuple[int, float]], paths: Mapping[int, str], query: str
) -> tuple[list[tuple[int, float]], int]:
    """``fused`` with the hits whose heading defines an option ``query`` names first, and
    how many those are. Among them, those under a top heading the query names come first
    (``tar -C``: tar's ``-C``, then ls's), each group in fused order. Their scores are
    raised to at least the best of the rest, so scores still fall down the list."""
    options = asked(query)
    first = [(item, score) for item, score in fused if defined(paths.get(item, "")) & options]
    if not first:
        return list(fused), 0
    words = set(_WORD.findall(query.lower()))
    first.sort(key=lambda hit: _top(paths[hit[0]]) not in words)
    moved = {item for item, _ in first}
    rest = [(item, score) for item, score in fused if item not in moved]
    floor = rest[0][1] if rest else 0.0
    raised = [(item, max(score, floor)) for item, score in first]
    # The sort may have put a lower score before a higher one: keep them falling.
    for at in range(len(raised) - 2, -1, -1):
        raised[at] = (raised[at][0], max(raised[at][1], raised[at + 1][1]))
    return raised + rest, len(first)


def _top(path: str) -> str:
    """The name of a path's top heading, for a man page its command: ``tar(1)`` → ``tar``."""
    return path.split(" > ", 1)[0].split("(", 1)[0].strip().lower()
