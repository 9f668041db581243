"""Stopwords that a question or a heading uses as names (``at`` the command, not the word)."""

from __future__ import annotations

import pytest

from knowhub.lang import query_tokens, question_names
from knowhub.lang.names import heading_names


@pytest.mark.parametrize(
    "question",
    [
        "How do I remove a job that was queued with at?",
        "What does the at command do?",
        "What does `at` print?",
        "man at",
        "Which options does at(1) take?",
        "如何用 at 命令删除作业？",
        "Как удалить задание at?",
    ],
)
def test_a_stopword_used_as_a_name_is_kept(question: str) -> None:
    assert "at" not in query_tokens(question)  # the word: a stopword
    assert question_names(question) == ["at"]  # the name


@pytest.mark.parametrize(
    "question",
    [
        "Which command lists the jobs queued at night?",
        "What is this option for?",
        "Can I log in with no password?",
        "How do I look at the queue?",
    ],
)
def test_stopwords_used_as_words_stay_out(question: str) -> None:
    assert question_names(question) == []


def test_headings_name_a_page_its_names_and_quoted_words() -> None:
    title = "at, batch, atq, atrm - queue, examine, or delete jobs for later execution"
    assert heading_names([title, "at(1)", "DESCRIPTION"]) == ["at"]
    assert heading_names(["which - locate a command", "which(1) > NAME"]) == ["which"]
    assert heading_names(["Running `which` in scripts"]) == ["which"]


def test_ordinary_headings_give_no_names() -> None:
    assert heading_names(["Getting started with the shell", "What is in a name"]) == []
