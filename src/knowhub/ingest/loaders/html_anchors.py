"""Where a page's headings can be linked to: the fragment a reader's browser scrolls to
(``guide.html#install``), so that a web page's chunks are cited at their section."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from knowhub.models import Heading

if TYPE_CHECKING:
    from bs4 import Tag

__all__ = ["anchored", "heading_anchor"]

# The text of the self-links documentation generators put in headings (Sphinx's ¶,
# MkDocs' ¶ or #, others' §).
_MARKS = frozenset({"¶", "#", "§", ""})


def heading_anchor(heading: Tag) -> str:
    """The fragment of a heading: its ``id``; an ``id`` or ``<a name>`` inside it; a
    self-link inside it (``<a href="#…">¶</a>``); the ``id`` of the section it opens
    (nothing with text before it there); an empty anchor just before it; else ``""``."""
    from bs4 import Tag

    if own := _id(heading):
        return own
    for inner in heading.find_all(True):
        if found := _id(inner):
            return found
    for link in heading.find_all("a", href=True):
        href = str(link["href"])
        if href.startswith("#") and len(href) > 1 and link.get_text().strip() in _MARKS:
            return href[1:]
    before = [s for s in heading.previous_siblings if isinstance(s, Tag) or str(s).strip()]
    if not any(isinstance(s, str) or s.get_text().strip() for s in before):
        parent = heading.parent
        opened = parent is not None and parent.name not in {"body", "html", "[document]"}
        if opened and parent is not None and (found := _id(parent)):
            return found
    if before and isinstance(before[0], Tag) and not before[0].get_text().strip():
        return _id(before[0])
    return ""


def _id(tag: Tag) -> str:
    value = tag.get("id") or (tag.get("name") if tag.name == "a" else None)
    return value.strip() if isinstance(value, str) else ""


def anchored(headings: tuple[Heading, ...], anchors: list[tuple[str, str]]) -> tuple[Heading, ...]:
    """``headings`` (found in the page's Markdown) with the anchors of the page's heading
    elements (``(title, anchor)`` in page order), matched in order by title: a heading whose
    element is not found keeps none."""
    out = []
    position = 0
    for heading in headings:
        for index in range(position, len(anchors)):
            title, anchor = anchors[index]
            if title.strip() == heading.title.strip():
                out.append(dataclasses.replace(heading, anchor=anchor))
                position = index + 1
                break
        else:
            out.append(heading)
    return tuple(out)
