"""Sentences the sources do not back are shown as such by the CLI and the MCP tool."""

from __future__ import annotations

from typing import Any

from knowhub.interfaces import cli  # noqa: F401  (cli_ask is imported through it)
from knowhub.interfaces.cli.ask import render_answer
from knowhub.interfaces.mcp.tools.answer import _answer_markdown, _answer_out
from tests.answer_helpers import source, verified

SOURCE = source("The Team plan costs $12 per month.")
TEXT = "The Team plan costs $12 per month [1]. Students pay $5 [1]. It is popular."


def end() -> dict[str, Any]:
    return verified(TEXT, SOURCE, model="openai:m").to_dict()


def test_the_cli_marks_each_sentence_its_sources_do_not_back() -> None:
    text = render_answer(end())
    assert "Not supported by the cited sources (! unsupported, ? partly):" in text
    assert "  ! Students pay $5." in text and "  ! It is popular." in text
    assert "The Team plan costs" not in text.split("Not supported")[1]
    assert text.endswith("(rag, confidence 0.27, partially_supported, openai:m)")


def test_the_mcp_ask_result_lists_them_and_carries_the_checks() -> None:
    out = _answer_out("Q?", "default", end(), 10_000)
    assert out.flagged_sentences == ["Students pay $5.", "It is popular."]
    assert out.generation_verification_status == "partially_supported"
    assert out.reasons == ["number_not_in_source", "unsupported_sentence", "uncited_sentence"]
    assert out.evidence_confidence == 0.8
    markdown = _answer_markdown(out)
    assert "Not supported by the cited sources:\n- Students pay $5.\n- It is popular." in markdown
    assert "(rag, confidence 0.27, partially_supported, openai:m)" in markdown


def test_a_verified_answer_shows_no_warning() -> None:
    text = render_answer(verified("The Team plan costs $12 per month [1].", SOURCE).to_dict())
    assert "Not supported" not in text and "verified" in text
