"""The source page's passage: neighbouring chunks stitched by their spans, the cited span
marked exactly, headings and pages shown where they change."""

from __future__ import annotations

from knowhub.interfaces.http.console.passage import Block, passage
from knowhub.models import Hit
from knowhub.testing.hits import hit

DOC = "# A\n\nOne two three. Four five six.\n\n# B\n\nSeven eight. Nine ten."


def _hit(n: int, start: int, end: int, section: str = "A", page: int | None = None) -> Hit:
    return hit(
        DOC[start:end],
        chunk_id=f"c{n}",
        score=0.0,
        title="Doc",
        page=page,
        section_path=section,
        line_start=0,
        line_end=0,
        char_start=start,
        char_end=end,
        doc_hash="h" * 64,
    )


def _text(blocks: list[Block]) -> str:
    return "".join(p.text for b in blocks for p in b.pieces)


def _marked(blocks: list[Block]) -> str:
    return "".join(p.text for b in blocks for p in b.pieces if p.marked)


# c0 "# A\n\nOne two three." overlaps c1 "three. Four five six."; c2 after a gap, in B.
CHUNKS = [_hit(0, 0, 19), _hit(1, 13, 34), _hit(2, 36, 63, "B")]


def test_overlapping_chunks_are_shown_once() -> None:
    blocks = passage(CHUNKS, CHUNKS[1], around=2)
    assert _text(blocks) == DOC[0:34] + DOC[36:63]
    assert [b.gap for b in blocks] == [False, False, True]


def test_the_cited_span_is_marked_exactly_even_inside_a_neighbours_overlap() -> None:
    blocks = passage(CHUNKS, CHUNKS[1], around=1)
    assert _marked(blocks) == CHUNKS[1].text
    assert blocks[0].pieces[-1].text == "three." and blocks[0].pieces[-1].marked
    assert [b.cited for b in blocks] == [True, True, False]


def test_only_the_asked_neighbours_are_shown() -> None:
    blocks = passage(CHUNKS, CHUNKS[2], around=1)
    assert [b.hit.chunk_id for b in blocks] == ["c1", "c2"]
    assert _text(blocks).startswith("three. Four")
    assert [b.hit.chunk_id for b in passage(CHUNKS, CHUNKS[0], around=0)] == ["c0"]


def test_headings_and_pages_are_shown_where_they_change() -> None:
    paged = [_hit(0, 0, 19, page=1), _hit(1, 13, 34, page=1), _hit(2, 36, 63, "B", page=2)]
    blocks = passage(list(reversed(paged)), paged[0], around=2)  # any order: sorted by span
    assert [(b.heading, b.page) for b in blocks] == [("A", 1), ("", None), ("B", 2)]


def test_a_chunk_missing_from_its_document_is_shown_alone() -> None:
    stray = _hit(9, 5, 19)
    blocks = passage(CHUNKS, stray, around=2)
    assert [b.hit.chunk_id for b in blocks] == ["c9"] and _marked(blocks) == stray.text
