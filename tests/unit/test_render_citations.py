"""Citations as each interface writes them: lines only where the file has lines."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from knowhub.answer.events import source_dict
from knowhub.interfaces import cli  # noqa: F401  (cli_ask is imported through it)
from knowhub.interfaces.cli.ask import render_answer
from knowhub.interfaces.mcp.tools.search import cite
from knowhub.interfaces.render import citation
from knowhub.models import Hit
from knowhub.testing.hits import hit

NOTES = hit(
    "The scheduler retries failed jobs.",
    chunk_id="c1",
    source="release-notes.html",
    title="Release notes",
    section_path="2.4",
    line_start=77,
    line_end=79,
)
# A PDF chunk: its page is what a reader opens; it has no lines (0).
POLICY = dataclasses.replace(
    NOTES, source="policy.pdf", page=2, section_path="", line_start=0, line_end=0
)


def _answer_sources(hit: Hit) -> str:
    result = {
        "answer": "It retries. [1]",
        "hit_type": "rag",
        "confidence": 0.9,
        "model": "test",
        "sources": [source_dict(1, hit)],
    }
    return next(line for line in render_answer(result).splitlines() if "[1] " in line)


@pytest.mark.parametrize("cite", [citation, cite, _answer_sources])
def test_citations_give_file_lines_and_leave_them_out_where_there_are_none(
    cite: Callable[[Hit], str],
) -> None:
    assert "lines 77-79" in cite(NOTES)
    pdf = cite(POLICY)
    assert "p. 2" in pdf and "lines" not in pdf


def test_closest_sources_name_each_file_once() -> None:
    result = {
        "answer": "The documents do not cover this question.",
        "hit_type": "insufficient_context",
        "confidence": 0.0,
        "model": "extractive",
        "sources": [{"source": name} for name in ("a.md", "b.pptx", "b.pptx", "c.txt", "d.md")],
    }
    lines = render_answer(result).splitlines()
    start = lines.index("Closest sources (not relevant enough to answer from):")
    assert lines[start + 1 : start + 4] == ["  a.md", "  b.pptx", "  c.txt"]


@pytest.mark.parametrize("cite", [citation, cite, _answer_sources])
def test_a_web_pages_chunk_is_cited_at_its_url_with_its_sections_anchor(
    cite: Callable[[Hit], str],
) -> None:
    page = "https://docs.example.org/guide/setup.html"
    web = dataclasses.replace(NOTES, source=page, metadata={"anchor": "install"})
    assert f"{page}#install, " in cite(web)
    assert web.to_dict()["url"] == f"{page}#install"
    # A file's anchor is not a link: its citation names the file as it is.
    assert "#install" not in cite(dataclasses.replace(web, source="setup.html"))
    assert f"{page}, " in cite(dataclasses.replace(web, metadata={}))


# A DocBook page's chunk: its file is one long line (line 2), the chunk 700 characters of it.
ONE_LINE = dataclasses.replace(
    NOTES,
    section_path="Chapter 71. BRIN Indexes",
    line_start=2,
    line_end=2,
    char_start=318,
    char_end=1018,
)


@pytest.mark.parametrize("cite", [citation, cite, _answer_sources])
def test_a_chunk_of_one_long_line_is_cited_by_section_and_characters(
    cite: Callable[[Hit], str],
) -> None:
    where = cite(ONE_LINE)
    assert "Chapter 71. BRIN Indexes" in where and "chars 318-1018" in where
    assert "lines" not in where
    short = dataclasses.replace(ONE_LINE, char_start=0, char_end=60)  # a line of its own
    assert "lines 2-2" in cite(short)
