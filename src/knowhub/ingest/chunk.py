"""Split a loaded document into heading-aware, size-bounded chunks with exact spans.

The document is cut into sections at its headings and page starts, and no chunk
crosses a section boundary (so a chunk is on one page, the one it is cited by).
Text before ``body_start`` (front matter) is never chunked; line numbers are the
file's, through the document's ``line_map``. A heading line stays with the body
that follows it: it opens its section's first chunk, and a heading with no body
of its own (directly followed by a deeper heading) opens the subsection's first
chunk instead.

Within a section the text becomes *units*: whole paragraphs (blank-line
separated) when they fit in ``size``; longer paragraphs are split at sentence
ends, sentences still too long at whitespace, and words still too long at
characters. Units are packed greedily into chunks of at most ``size``. Each next
chunk of a section starts about ``overlap`` before the previous one ends,
moved forward to a nearby sentence or word start; the overlap shrinks when the
next unit would not fit otherwise. Finally, a section's last chunk that adds
less than a tenth of ``size`` of new text is merged into the one before it if
the result stays within 1.1 × ``size``, so sections do not end in crumbs.

A Markdown table is never packed with the prose around it: it is cut into
windows of whole rows (:mod:`knowhub.ingest.chunk_tables`), and the runs of
prose before and after it are packed as above, each on its own. A picture's
description block (``doc.images``) is a chunk of its own too, so that a search
that finds the picture finds it alone: its chunk's ``image`` metadata names it.

Chunks never hold leading or trailing whitespace: spans are moved, text is never
edited, so ``chunk.text == doc.text[chunk.char_start:chunk.char_end]`` always.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from knowhub.ingest.chunk_tables import table_windows
from knowhub.lang import count_tokens
from knowhub.lang.detect import span_languages
from knowhub.models import Chunk, LoadedDocument

__all__ = ["ChunkingOptions", "chunk_document", "make_chunk_id"]

_Span = tuple[int, int]
_Measure = Callable[[int, int], int]
"""Size of ``text[start:end]`` in the unit chunks are measured in."""

_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_NON_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s")
_WORD_CHAR = re.compile(r"\w")
_WORD = re.compile(r"\S+")
# A Latin sentence ends at . ! ? ; before whitespace (so "3.5" stays whole); a
# CJK one at 。！？；… whatever follows, as CJK puts no space between sentences.
# Closing quotes and brackets stay with the sentence they close. The lookahead skips
# everything else at once (twice as fast as trying both alternatives everywhere).
_SENTENCE_END = re.compile(
    r"(?=[.!?;。！？；…])(?:[.!?;]+[\"'’”)\]»]*(?=\s)|[。！？；…]+[\"'’”」』）)\]》»]*)"
)
# How far before a candidate overlap start a sentence end may begin and still
# count (the punctuation and closing quotes sit just before the next sentence).
_SENTENCE_LOOKBACK = 4

_TAIL_SHARE = 0.1
"""A section's last chunk adding less than this share of ``size`` is merged back …"""
_TAIL_SLACK = 1.1
"""… when the merged chunk stays within this multiple of ``size``."""


@dataclass(frozen=True)
class ChunkingOptions:
    """How large chunks are and how much consecutive chunks share.

    Attributes:
        size: the most a chunk holds, in ``unit``s (a merged tail may reach 1.1 ×).
        overlap: how much of the previous chunk in the same section a chunk
            repeats at its start, in ``unit``s; less than ``size``.
        unit: ``chars``, or ``tokens`` as counted by :func:`knowhub.lang.count_tokens`.
    """

    size: int = 800
    overlap: int = 150
    unit: Literal["chars", "tokens"] = "chars"

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"chunk size must be at least 1, got {self.size}")
        if not 0 <= self.overlap < self.size:
            raise ValueError(
                f"chunk overlap must be at least 0 and less than the size ({self.size}), "
                f"got {self.overlap}"
            )
        if self.unit not in ("chars", "tokens"):
            raise ValueError(f"chunk unit must be 'chars' or 'tokens', got {self.unit!r}")


@dataclass(frozen=True)
class _Section:
    start: int  # where its first chunk may start: the heading line, or carried headings
    body: int  # where the text after the heading line starts
    end: int
    level: int  # 0 for the text before the first heading
    path: str
    anchor: str = ""  # the innermost heading's with one (a web page's section link)


def make_chunk_id(doc_id: str, index: int, text: str) -> str:
    """Build the chunk id ``{doc_id[:16]}_{index:04d}_{sha256(text)[:8]}``.

    Args:
        doc_id: the document's id (:attr:`knowhub.models.DocumentRecord.doc_id`): unique in
            its collection and kept when the document moves, so its chunk ids are too.
        index: the chunk's position in the document, from 0.
        text: the chunk's text.

    Returns:
        The id; the same document version always yields the same ids.
    """
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{doc_id[:16]}_{index:04d}_{digest}"


def chunk_document(
    doc: LoadedDocument,
    doc_hash: str,
    options: ChunkingOptions,
    metadata: Mapping[str, Any] | None = None,
    doc_id: str | None = None,
) -> list[Chunk]:
    """Split a document into chunks, deterministically.

    Args:
        doc: the loader's output; spans point into ``doc.text``.
        doc_hash: sha256 hex of the file's bytes.
        options: size, overlap and unit.
        metadata: copied into every chunk.
        doc_id: the document's id, for the chunk ids (default: ``doc_hash[:16]``).

    Returns:
        The chunks in text order, indexed from 0; empty for a blank document.
    """
    text = doc.text
    measure = _measurer(text, options.unit)
    pictures = sorted(
        (i.start, i.end, i.sha256) for i in doc.images if i.start is not None and i.end is not None
    )
    starts = [start for start, _, _ in pictures]
    spans: list[tuple[_Span, _Section, str]] = []
    for section in _sections(doc):
        section_spans = _chunk_section(text, section, options, measure, starts)
        # Once per section, not per chunk: detecting was half of chunking's time.
        languages = span_languages(text, section_spans, section.start, section.end)
        spans += [
            (span, section, language)
            for span, language in zip(section_spans, languages, strict=True)
        ]
    lines = _line_finder(doc)
    chunks = []
    for index, ((start, end), section, language) in enumerate(spans):
        chunk_text = text[start:end]
        line_start, line_end = lines(start, end)
        chunks.append(
            Chunk(
                chunk_id=make_chunk_id(doc_id or doc_hash, index, chunk_text),
                doc_hash=doc_hash,
                index=index,
                text=chunk_text,
                section_path=section.path,
                page=_page(doc.page_starts, start),
                line_start=line_start,
                line_end=line_end,
                char_start=start,
                char_end=end,
                language=language,
                metadata=_with_picture(metadata, pictures, starts, start, end, section.anchor),
            )
        )
    return chunks


def _with_picture(
    metadata: Mapping[str, Any] | None,
    pictures: list[tuple[int, int, str]],
    starts: list[int],
    start: int,
    end: int,
    anchor: str,
) -> dict[str, Any]:
    """The chunk's metadata; ``image``: the picture whose block it holds (or a piece of, a
    long OCR reading being cut like prose); ``anchor``: its section's link in its page."""
    out = dict(metadata or {})
    if anchor:
        out["anchor"] = anchor
    index = bisect.bisect_right(starts, start) - 1  # the last block starting at or before
    if index >= 0 and pictures[index][1] > start:
        out["image"] = pictures[index][2]
    elif index + 1 < len(starts) and starts[index + 1] < end:
        out["image"] = pictures[index + 1][2]
    return out


def _measurer(text: str, unit: str) -> _Measure:
    if unit == "tokens":
        return lambda start, end: count_tokens(text[start:end])
    return lambda start, end: end - start


def _page(page_starts: tuple[int, ...], offset: int) -> int | None:
    if not page_starts:
        return None
    return max(1, bisect.bisect_right(page_starts, offset))


def _line_finder(doc: LoadedDocument) -> Callable[[int, int], tuple[int, int]]:
    """``lines(start, end)``: the file lines ``text[start:end]`` spans (see ``line_map``)."""
    if doc.line_map is None:
        return lambda start, end: (0, 0)
    newlines = [match.start() for match in re.finditer("\n", doc.text)]

    def count(offset: int) -> int:  # newlines before offset
        return bisect.bisect_left(newlines, offset)

    if not doc.line_map:
        return lambda start, end: (count(start) + 1, count(end - 1) + 1)
    pieces = doc.line_map
    offsets = [piece.offset for piece in pieces]
    # Where each piece's text ends, without the blank lines that separate it from the next.
    ends = [
        start + len(doc.text[start:following].rstrip())
        for start, following in zip(offsets, [*offsets[1:], len(doc.text)], strict=True)
    ]

    def line(offset: int) -> int:
        index = max(0, bisect.bisect_right(offsets, offset) - 1)
        piece, end = pieces[index], ends[index]
        offset = min(offset, max(piece.offset, end - 1))
        if count(end) - count(piece.offset) >= piece.last - piece.first:
            # As many lines as the file had (code, a list item): count them.
            return min(piece.first + count(offset) - count(piece.offset), piece.last)
        # Reflowed text (a paragraph joined into one line): the line in proportion.
        share = (offset - piece.offset) / max(1, end - 1 - piece.offset)
        return piece.first + round(share * (piece.last - piece.first))

    return lambda start, end: (line(start), line(end - 1))


def _sections(doc: LoadedDocument) -> list[_Section]:
    """The preamble and one section per heading, heading-only sections folded forward,
    each cut again at page starts: a chunk is cited by one page, so it stays on it."""
    sections = _heading_sections(doc)
    if not doc.page_starts:
        return sections
    return [piece for section in sections for piece in _split_at_pages(section, doc.page_starts)]


def _split_at_pages(section: _Section, page_starts: tuple[int, ...]) -> list[_Section]:
    cuts = [start for start in page_starts if section.start < start < section.end]
    pieces = []
    for start, end in itertools.pairwise([section.start, *cuts, section.end]):
        body = min(max(start, section.body), end)
        pieces.append(replace(section, start=start, body=body, end=end))
    return pieces


def _heading_sections(doc: LoadedDocument) -> list[_Section]:
    text = doc.text
    body_start = min(max(doc.body_start, 0), len(text))
    sections = [_Section(body_start, body_start, len(text), 0, "")]
    stack: list[tuple[int, str, str]] = []
    for heading in doc.headings:
        # Clamped so sections stay in order and inside the text whatever the loader says.
        start = min(max(heading.char_start, sections[-1].start), len(text))
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title.strip(), heading.anchor))
        line_end = text.find("\n", start)
        body = len(text) if line_end < 0 else line_end + 1
        sections[-1] = replace(sections[-1], end=start, body=min(sections[-1].body, start))
        path = " > ".join(title for _, title, _ in stack)
        anchor = next((a for _, _, a in reversed(stack) if a), "")
        sections.append(_Section(start, body, len(text), heading.level, path, anchor))
    return _fold_heading_only(text, sections)


def _fold_heading_only(text: str, sections: list[_Section]) -> list[_Section]:
    """Give a heading with no body to the deeper section that follows it."""
    folded: list[_Section] = []
    carried: int | None = None
    for section, following in zip(sections, [*sections[1:], None], strict=True):
        if carried is not None:
            section = replace(section, start=carried)
            carried = None
        if (
            following is not None
            and 0 < section.level < following.level
            and not _NON_SPACE.search(text, section.body, section.end)
        ):
            carried = section.start
        else:
            folded.append(section)
    return folded


def _chunk_section(
    text: str, section: _Section, options: ChunkingOptions, measure: _Measure, pictures: list[int]
) -> list[_Span]:
    """The section's chunks: runs of prose packed, each table cut into row windows, each
    picture's block (starting at one of ``pictures``, sorted) alone."""
    chunks: list[_Span] = []
    prose: list[_Span] = []
    for paragraph in _paragraphs(text, section):
        index = bisect.bisect_left(pictures, paragraph[0])
        if index < len(pictures) and pictures[index] < paragraph[1]:
            chunks += _chunk_prose(text, prose, options, measure)
            chunks += _chunk_prose(text, [paragraph], options, measure)
            prose = []
            continue
        windows = table_windows(text, paragraph, options.size, measure)
        if windows is None:
            prose.append(paragraph)
            continue
        chunks += _chunk_prose(text, prose, options, measure)
        prose = []
        for window in windows:
            if trimmed := _trim(text, *window):
                chunks += _chunk_prose(text, [trimmed], options, measure)
    return chunks + _chunk_prose(text, prose, options, measure)


def _chunk_prose(
    text: str, paragraphs: list[_Span], options: ChunkingOptions, measure: _Measure
) -> list[_Span]:
    """Paragraphs split into units that fit, packed greedily, a crumb of a tail merged."""
    units = [
        unit for paragraph in paragraphs for unit in _split(text, paragraph, options.size, measure)
    ]
    if not units:
        return []
    return _merge_tail(_pack(text, units, options, measure), options.size, measure)


def _paragraphs(text: str, section: _Section) -> list[_Span]:
    """Blank-line separated paragraphs, the heading lines glued to the first one."""
    spans: list[_Span] = []
    cursor = section.body
    for match in _BLANK_LINE.finditer(text, section.body, section.end):
        spans.append((cursor, match.start()))
        cursor = match.end()
    spans.append((cursor, section.end))
    paragraphs = [trimmed for start, end in spans if (trimmed := _trim(text, start, end))]
    if section.start < section.body:
        first_end = paragraphs[0][1] if paragraphs else section.body
        heading = _trim(text, section.start, first_end)
        paragraphs[:1] = [heading] if heading else []
    return paragraphs


def _trim(text: str, start: int, end: int) -> _Span | None:
    """The span without its leading and trailing whitespace; None if nothing is left."""
    first = _NON_SPACE.search(text, start, end)
    if first is None:
        return None
    return first.start(), start + len(text[start:end].rstrip())


def _split(text: str, span: _Span, size: int, measure: _Measure, level: int = 0) -> list[_Span]:
    """Cut a span into pieces that fit: at sentence ends, then words, then characters."""
    start, end = span
    if measure(start, end) <= size:
        return [span]
    if level == 0:
        pieces = _sentences(text, start, end)
    elif level == 1:
        pieces = [match.span() for match in _WORD.finditer(text, start, end)]
    else:
        return _hard_split(start, end, size, measure)
    return [unit for piece in pieces for unit in _split(text, piece, size, measure, level + 1)]


def _sentences(text: str, start: int, end: int) -> list[_Span]:
    bounds = [start, *(match.end() for match in _SENTENCE_END.finditer(text, start, end)), end]
    return [span for a, b in itertools.pairwise(bounds) if (span := _trim(text, a, b))]


def _hard_split(start: int, end: int, size: int, measure: _Measure) -> list[_Span]:
    pieces = []
    while start < end:
        cut = _fit_end(measure, start, end, size)
        pieces.append((start, cut))
        start = cut
    return pieces


def _fit_end(measure: _Measure, start: int, end: int, size: int) -> int:
    """The furthest position in ``(start, end]`` whose span from ``start`` fits ``size``.

    Always at least ``start + 1``, so splitting makes progress.
    """
    low, high = start + 1, end
    while low < high:
        middle = (low + high + 1) // 2
        if measure(start, middle) <= size:
            low = middle
        else:
            high = middle - 1
    return low


def _back(measure: _Measure, end: int, floor: int, amount: int) -> int:
    """The earliest position in ``[floor, end]`` whose span up to ``end`` fits ``amount``.

    Gallops back from ``end`` before bisecting: the answer is usually close to
    ``end``, and measuring tokens costs time linear in the span measured.
    """
    high, width = end, max(amount, 1)  # measure(high, end) always fits
    while True:
        low = max(floor, end - width)
        if measure(low, end) > amount:
            break
        if low == floor:
            return floor
        high, width = low, width * 2
    low += 1  # measure(low - 1, end) does not fit
    while low < high:
        middle = (low + high) // 2
        if measure(middle, end) <= amount:
            high = middle
        else:
            low = middle + 1
    return low


def _pack(
    text: str, units: list[_Span], options: ChunkingOptions, measure: _Measure
) -> list[_Span]:
    """Greedily pack consecutive units into chunks, each after the first overlapping."""
    chunks: list[_Span] = []
    start, current = units[0][0], 0
    while True:
        last = current
        while last + 1 < len(units) and measure(start, units[last + 1][1]) <= options.size:
            last += 1
        chunks.append((start, units[last][1]))
        if last + 1 == len(units):
            return chunks
        current = last + 1
        start = _overlap_start(text, chunks[-1], units[current], options, measure)


def _overlap_start(
    text: str, previous: _Span, unit: _Span, options: ChunkingOptions, measure: _Measure
) -> int:
    """Where the chunk opening with ``unit`` starts, reaching back into ``previous``.

    About ``overlap`` before the previous chunk's end, but never so far back that
    ``unit`` no longer fits (which also keeps the new chunk from swallowing the
    whole previous one, as the two together did not fit), then moved forward to
    a sentence or word start when one is near.
    """
    previous_start, previous_end = previous
    wanted = _back(measure, previous_end, previous_start, options.overlap)
    if measure(wanted, unit[1]) > options.size:
        wanted = _back(measure, unit[1], wanted, options.size)
    if wanted >= previous_end:
        return unit[0]
    snapped = _snap_forward(text, wanted, previous_end)
    # Open on a word: an overlap of bare punctuation (a comma, a closing quote) is noise.
    first = _WORD_CHAR.search(text, snapped, unit[0])
    return first.start() if first else unit[0]


def _snap_forward(text: str, position: int, limit: int) -> int:
    """The first sentence start, else word start, in the first half of ``[position, limit)``.

    "Near" is half the overlap, so snapping keeps at least half of it; with no
    boundary that near (a long word, CJK without punctuation) ``position`` stays.
    """
    near = position + (limit - position) // 2
    lookback = max(0, position - _SENTENCE_LOOKBACK)
    for match in _SENTENCE_END.finditer(text, lookback, near):
        after = _NON_SPACE.search(text, match.end(), limit)
        if after and after.start() >= position:
            return after.start()
    if position == 0 or text[position - 1].isspace():
        return position
    space = _SPACE.search(text, position, near)
    return space.start() if space else position


def _merge_tail(chunks: list[_Span], size: int, measure: _Measure) -> list[_Span]:
    """Merge a section's last chunk into the previous one when it adds only crumbs."""
    if len(chunks) < 2:
        return chunks
    (previous_start, previous_end), (_, last_end) = chunks[-2], chunks[-1]
    adds_little = measure(previous_end, last_end) < _TAIL_SHARE * size
    if adds_little and measure(previous_start, last_end) <= _TAIL_SLACK * size:
        return [*chunks[:-2], (previous_start, last_end)]
    return chunks
