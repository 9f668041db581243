"""The source view draws the Markdown a loader wrote (an HTML or Office file's headings and
tables) instead of printing ``##`` and ``|---|``; a Markdown file's own text stays as written."""

from __future__ import annotations

import pytest

from knowhub.interfaces.http.console.markup import DRAWN_FORMATS, draw
from knowhub.interfaces.http.console.passage import Block, Piece
from knowhub.testing.hits import hit
from tests.helpers import finishes

HIT = hit(
    chunk_id="c0",
    score=0.0,
    source="rates.html",
    title="Rates",
    line_start=0,
    line_end=0,
    doc_hash="h" * 64,
)


def _block(*pieces: tuple[str, bool], gap: bool = False) -> Block:
    return Block(HIT, tuple(Piece(t, m) for t, m in pieces), "", None, gap)


TABLE = "## Rates\n\n| City | Rate |\n| --- | --- |\n| Paris | 200 |\n| <b>Oslo</b> | 250 |\n"


def test_headings_and_tables_are_drawn_and_their_symbols_gone() -> None:
    (shown,) = draw([_block((TABLE, False))])
    assert '<span class="src-h src-h2">Rates</span>' in shown
    assert '<span class="src-row src-head"><span class="src-cell">City</span>' in shown
    assert '<span class="src-cell">Paris</span><span class="src-cell">200</span>' in shown
    assert "##" not in shown and "---" not in shown and "|" not in shown
    assert "&lt;b&gt;Oslo&lt;/b&gt;" in shown  # the document's text is escaped, never markup


def test_the_cited_span_stays_marked_inside_a_drawn_table() -> None:
    pieces = (("| City | Rate |\n| --- | --- |\n| Par", False), ("is | 200", True), (" |\n", False))
    (shown,) = draw([_block(*pieces)])
    assert (
        '<span class="src-cell">Par<mark>is</mark></span><span class="src-cell"><mark>200</mark>'
        in shown
    )


def test_a_block_that_starts_inside_a_line_is_not_taken_for_a_heading() -> None:
    _, second = draw([_block(("The rate is ", False)), _block(("## not a heading\n", False))])
    assert "src-h" not in second and "## not a heading" in second


def test_formats_whose_text_is_the_file_itself_are_not_drawn() -> None:
    assert {"html", "docx", "pptx", "pdf", "xlsx", "csv"} <= DRAWN_FORMATS
    assert not {"markdown", "mdx", "text", "rst", "json"} & DRAWN_FORMATS


# A table rule followed by spaces and then not a rule: the old pattern split the spaces
# between two "\s*" in every way (quadratic), hours at this size.
HOSTILE_LINES = [
    "|---" + " " * (1 << 20) + "x",
    "| --- |" + " " * (1 << 20) + "x",
    "|" + "---|" * (1 << 18) + " x",
    "|" + " " * (1 << 20) + "x",
    "```" + " " * (1 << 20),
]
HOSTILE_SCRIPT = """
from knowhub.interfaces.http.console.markup import draw
from tests.unit.test_console_markup import HOSTILE_LINES, _block
for line in HOSTILE_LINES:
    draw([_block((line + "\\n" + line, False))])
print("drawn", len(HOSTILE_LINES))
"""


def test_a_line_is_drawn_in_time_linear_in_its_length() -> None:
    done = finishes(HOSTILE_SCRIPT)
    assert done.returncode == 0 and f"drawn {len(HOSTILE_LINES)}" in done.stdout, done.stderr


@pytest.mark.parametrize(
    "rule", ["|---|---|", "| --- | :---: |", "|---|---", "  | :--- |  ", "| --- | --- |   "]
)
def test_a_table_rule_is_not_shown_however_it_is_spaced(rule: str) -> None:
    (shown,) = draw([_block((f"| a | b |\n{rule}\n| 1 | 2 |\n", False))])
    assert "---" not in shown and "src-head" in shown
