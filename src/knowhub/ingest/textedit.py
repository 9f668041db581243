"""Edit a loaded document's text and keep every offset into it pointing at the same content.

A transform that changes text (cleanup of headers and hyphenation, or any later one) says
*what* to change as :class:`Edit` s on the current text; :func:`apply_edits` makes the new
text and moves each offset the document carries (``page_starts``, each heading's
``char_start``, ``body_start``, each picture's block), so chunking, page citations and
section paths work on the edited text as they did on the loaded one.

Only a document whose text is not the file's own lines (``line_map is None``: PDF, Office,
OCR) can be edited: Markdown and text files are cited by line, and an edit would move them.

How a position moves: one before an edit keeps its place relative to the text before it;
one at the start of a replaced range stays at the start of the replacement (text inserted
where nothing is replaced goes before the position's content); one inside a replaced range
moves to just after the replacement (a page that began inside a run of blank lines now
begins after the single blank line left). A heading whose first character was replaced
lost its line, so it is dropped; a picture whose block's first character was replaced
keeps no block (it stays listed, as a picture with nothing said of it).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from knowhub.models import DocumentImage, Heading, LoadedDocument

__all__ = ["Edit", "apply_edits"]


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``replacement`` (an empty one deletes)."""

    start: int
    end: int
    replacement: str = ""

    def changes(self, text: str) -> bool:
        """Whether applying it to ``text`` changes anything."""
        return text[self.start : self.end] != self.replacement


def apply_edits(doc: LoadedDocument, edits: Iterable[Edit]) -> LoadedDocument:
    """``doc`` with ``edits`` applied to its text and its offsets moved to match.

    Args:
        doc: a document without file lines (``line_map is None``).
        edits: non-overlapping edits on ``doc.text``, in any order.

    Returns:
        ``doc`` itself when there is nothing to change, else an edited copy.

    Raises:
        ValueError: ``doc`` has file lines, or edits overlap or fall outside the text.
    """
    ordered = sorted((e for e in edits if e.changes(doc.text)), key=lambda e: e.start)
    if not ordered:
        return doc
    if doc.line_map is not None:
        raise ValueError(f"{doc.title}: a document cited by file lines cannot be edited")
    _check(ordered, len(doc.text))
    shift = _Shift(ordered)
    return replace(
        doc,
        text=_edited(doc.text, ordered),
        page_starts=tuple(shift(p) for p in doc.page_starts),
        headings=tuple(
            replace(h, char_start=shift(h.char_start))
            for h in doc.headings
            if not _replaced(h, ordered, shift.starts)
        ),
        body_start=shift(doc.body_start),
        images=tuple(_moved(image, ordered, shift) for image in doc.images),
    )


def _moved(image: DocumentImage, edits: Sequence[Edit], shift: _Shift) -> DocumentImage:
    if image.start is None or image.end is None:
        return image
    if _inside(image.start, edits, shift.starts):
        return replace(image, start=None, end=None, described_by="")
    return replace(image, start=shift(image.start), end=shift(image.end))


def _check(edits: Sequence[Edit], length: int) -> None:
    end = 0
    for edit in edits:
        if not end <= edit.start <= edit.end <= length:
            raise ValueError(
                f"edit {edit.start}:{edit.end} overlaps the one before (ending at {end}) "
                f"or falls outside the text (length {length})"
            )
        end = edit.end


def _edited(text: str, edits: Sequence[Edit]) -> str:
    parts: list[str] = []
    at = 0
    for edit in edits:
        parts += (text[at : edit.start], edit.replacement)
        at = edit.end
    parts.append(text[at:])
    return "".join(parts)


def _replaced(heading: Heading, edits: Sequence[Edit], starts: Sequence[int]) -> bool:
    """Whether ``heading``'s first character lies in a replaced range."""
    return _inside(heading.char_start, edits, starts)


def _inside(offset: int, edits: Sequence[Edit], starts: Sequence[int]) -> bool:
    """Whether the character at ``offset`` lies in a replaced range."""
    at = bisect.bisect_right(starts, offset) - 1
    return at >= 0 and edits[at].start <= offset < edits[at].end


class _Shift:
    """Maps an offset in the old text to the new one (see the module docstring)."""

    def __init__(self, edits: Sequence[Edit]) -> None:
        self.edits = edits
        self.starts = [e.start for e in edits]
        # How far the edits before edit i (exclusive) moved the text after them.
        self.deltas = [0]
        for edit in edits:
            self.deltas.append(self.deltas[-1] + len(edit.replacement) - (edit.end - edit.start))

    def __call__(self, offset: int) -> int:
        at = bisect.bisect_right(self.starts, offset) - 1
        if at < 0:
            return offset
        edit = self.edits[at]
        if offset == edit.start < edit.end:  # its content replaced: the replacement's start
            return offset + self.deltas[at]
        if offset < edit.end:  # inside the replaced range: just after its replacement
            return edit.start + self.deltas[at] + len(edit.replacement)
        return offset + self.deltas[at + 1]
